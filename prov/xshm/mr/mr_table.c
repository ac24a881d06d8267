/*
 * The registration table: a hash of chains by key.  Keys are the
 * application's (checked for duplicates) or the table's own, counted up.
 */
#include <rdma/fi_errno.h>

#include "mr/mr_table.h"

static size_t bucket_of(uint64_t key)
{
	return (size_t) ((key * 0x9e3779b97f4a7c15ULL) >> 56) % XSHM_MR_BUCKETS;
}

static struct xshm_mr_entry *find(const struct xshm_mr_table *table,
				  uint64_t key)
{
	struct xshm_mr_entry *entry = table->buckets[bucket_of(key)];

	while (entry && entry->key != key)
		entry = entry->next;
	return entry;
}

void xshm_mr_table_init(struct xshm_mr_table *table)
{
	for (size_t i = 0; i < XSHM_MR_BUCKETS; i++)
		table->buckets[i] = NULL;
	table->next_key = 0;
	table->count = 0;
}

int xshm_mr_table_insert(struct xshm_mr_table *table,
			 struct xshm_mr_entry *entry, bool user_key)
{
	size_t bucket;

	if (user_key && find(table, entry->key))
		return -FI_ENOKEY;
	if (!user_key) {
		do
			entry->key = ++table->next_key;
		while (find(table, entry->key));
	}
	bucket = bucket_of(entry->key);
	entry->next = table->buckets[bucket];
	table->buckets[bucket] = entry;
	table->count++;
	return 0;
}

void xshm_mr_table_remove(struct xshm_mr_table *table,
			  struct xshm_mr_entry *entry)
{
	struct xshm_mr_entry **link = &table->buckets[bucket_of(entry->key)];

	while (*link && *link != entry)
		link = &(*link)->next;
	if (!*link)
		return;
	*link = entry->next;
	table->count--;
}

/* The pieces of entry's buffers from offset on, len bytes. */
static size_t slice(const struct xshm_mr_entry *entry, uint64_t offset,
		    uint64_t len, struct iovec *iov)
{
	size_t count = 0;

	for (size_t i = 0; i < entry->iov_count && len; i++) {
		uint64_t seg = entry->iov[i].iov_len;
		uint64_t take;

		if (offset >= seg) {
			offset -= seg;
			continue;
		}
		take = seg - offset < len ? seg - offset : len;
		iov[count].iov_base = (char *) entry->iov[i].iov_base + offset;
		iov[count++].iov_len = take;
		len -= take;
		offset = 0;
	}
	return count;
}

int xshm_mr_table_resolve(const struct xshm_mr_table *table, uint64_t key,
			  uint64_t addr, uint64_t len, uint64_t access,
			  struct iovec *iov, size_t *count,
			  const struct xshm_mr_entry **found)
{
	const struct xshm_mr_entry *entry = find(table, key);
	uint64_t offset;

	if (!entry)
		return -FI_EINVAL;
	if ((entry->access & access) != access)
		return -FI_EACCES;
	/* written so that no sum can wrap around */
	if (addr < entry->base || len > entry->len ||
	    addr - entry->base > entry->len - len)
		return -FI_EACCES;
	offset = addr - entry->base;
	*count = slice(entry, offset, len, iov);
	*found = entry;
	return 0;
}
