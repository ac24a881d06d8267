/*
 * The index of posted tagged receives (tag_index.h).  fi_tagged(3): a
 * message matches the first posted receive that accepts it.  Within a
 * bucket that is the first entry that accepts it; across classes and the
 * fallback list, the candidate posted earliest.
 */
#include "srx/tag_index.h"
#include "srx/srx.h"

#define ALL_CLASSES	((1u << XSHM_TAG_CLASSES) - 1)

static struct xshm_dlist *bucket_of(struct xshm_tag_class *class, uint64_t tag)
{
	uint64_t key = tag & ~class->ignore;

	/* Fibonacci hashing: tags that differ in low bits spread out. */
	return &class->buckets[(key * 0x9e3779b97f4a7c15ULL) >>
			       (64 - XSHM_TAG_BUCKET_BITS)];
}

static struct xshm_rx_entry *entry_of(struct xshm_dlist *link)
{
	return xshm_container_of(link, struct xshm_rx_entry, tag_node.link);
}

void xshm_tag_index_init(struct xshm_tag_index *index)
{
	index->on = false;
	index->active = 0;
	index->next_seq = 0;
	xshm_dlist_init(&index->fallback);
	for (unsigned c = 0; c < XSHM_TAG_CLASSES; c++) {
		index->classes[c].count = 0;
		for (unsigned b = 0; b < XSHM_TAG_BUCKETS; b++)
			xshm_dlist_init(&index->classes[c].buckets[b]);
	}
}

/* The class holding mask ignore, else a free one, else the fallback. */
static unsigned class_for(const struct xshm_tag_index *index, uint64_t ignore)
{
	unsigned free_classes = ~index->active & ALL_CLASSES;

	for (unsigned left = index->active; left; left &= left - 1) {
		unsigned c = __builtin_ctz(left);

		if (index->classes[c].ignore == ignore)
			return c;
	}
	return free_classes ? (unsigned) __builtin_ctz(free_classes) :
			      XSHM_TAG_FALLBACK;
}

void xshm_tag_index_add(struct xshm_tag_index *index,
			struct xshm_rx_entry *entry)
{
	struct xshm_tag_node *node = &entry->tag_node;
	unsigned c = class_for(index, entry->ignore);
	struct xshm_tag_class *class = &index->classes[c];

	node->seq = index->next_seq++;
	node->class = c;
	if (c == XSHM_TAG_FALLBACK) {
		xshm_dlist_append(&index->fallback, &node->link);
		return;
	}
	if (!class->count++) {
		class->ignore = entry->ignore;
		index->active |= 1u << c;
	}
	xshm_dlist_append(bucket_of(class, entry->peer.tag), &node->link);
}

void xshm_tag_index_build(struct xshm_tag_index *index,
			  struct xshm_dlist *posted)
{
	struct xshm_dlist *it;

	index->on = true;
	xshm_dlist_foreach(posted, it)
		xshm_tag_index_add(index, (struct xshm_rx_entry *) it);
}

static struct xshm_rx_entry *first_accepting(struct xshm_dlist *list,
					     fi_addr_t addr, uint64_t tag)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct xshm_rx_entry *entry = entry_of(it);

		if (xshm_srx_addr_matches(entry->peer.addr, addr) &&
		    xshm_srx_tag_matches(entry->peer.tag, entry->ignore, tag))
			return entry;
	}
	return NULL;
}

static struct xshm_rx_entry *earlier(struct xshm_rx_entry *a,
				     struct xshm_rx_entry *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a->tag_node.seq < b->tag_node.seq ? a : b;
}

struct xshm_rx_entry *xshm_tag_index_find(struct xshm_tag_index *index,
					  fi_addr_t addr, uint64_t tag)
{
	struct xshm_rx_entry *best = NULL;

	for (unsigned left = index->active; left; left &= left - 1) {
		struct xshm_tag_class *class =
			&index->classes[__builtin_ctz(left)];

		best = earlier(best, first_accepting(bucket_of(class, tag),
						     addr, tag));
	}
	if (!xshm_dlist_empty(&index->fallback))
		best = earlier(best, first_accepting(&index->fallback, addr,
						     tag));
	return best;
}
