/*
 * The posted tagged receives, indexed for matching (tag_index.c).  A
 * receive belongs to the mask class of its ignore mask and sits there in
 * the bucket of its masked tag (tag & ~ignore), so that a message looks at
 * one bucket per class instead of every posted receive.  Receives whose
 * mask finds no free class wait on a fallback list.  Buckets and the
 * fallback list keep post order; the post sequence decides between them.
 * The SRX (srx.c) indexes its receives only while many stand before a
 * match: receives posted while it does not are UNINDEXED.
 */
#ifndef XSHM_TAG_INDEX_H
#define XSHM_TAG_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "base/list.h"

#define XSHM_TAG_CLASSES	8
#define XSHM_TAG_BUCKET_BITS	6
#define XSHM_TAG_BUCKETS	(1u << XSHM_TAG_BUCKET_BITS)
#define XSHM_TAG_FALLBACK	XSHM_TAG_CLASSES	/* class of the fallback list */
#define XSHM_TAG_UNINDEXED	(XSHM_TAG_CLASSES + 1)	/* in no list here */

struct xshm_rx_entry;

/* A receive's place in the index, kept in struct xshm_rx_entry. */
struct xshm_tag_node {
	struct xshm_dlist link;		/* in its bucket or the fallback list */
	uint64_t seq;			/* post order across classes */
	unsigned class;			/* its class, XSHM_TAG_FALLBACK or _UNINDEXED */
};

struct xshm_tag_class {
	uint64_t ignore;		/* the mask of all its receives */
	size_t count;			/* 0: free for any mask */
	struct xshm_dlist buckets[XSHM_TAG_BUCKETS];
};

struct xshm_tag_index {
	bool on;			/* the SRX's receives are indexed */
	unsigned active;		/* bit per class with receives */
	uint64_t next_seq;
	struct xshm_dlist fallback;
	struct xshm_tag_class classes[XSHM_TAG_CLASSES];
};

void xshm_tag_index_init(struct xshm_tag_index *index);
void xshm_tag_index_add(struct xshm_tag_index *index,
			struct xshm_rx_entry *entry);
/* Turns the index on with the receives of posted, in their order. */
void xshm_tag_index_build(struct xshm_tag_index *index,
			  struct xshm_dlist *posted);

/* First posted receive that accepts a message from addr with tag. */
struct xshm_rx_entry *xshm_tag_index_find(struct xshm_tag_index *index,
					  fi_addr_t addr, uint64_t tag);

static inline void xshm_tag_index_remove(struct xshm_tag_index *index,
					 struct xshm_tag_node *node)
{
	if (node->class == XSHM_TAG_UNINDEXED)
		return;
	xshm_dlist_remove(&node->link);
	if (node->class != XSHM_TAG_FALLBACK &&
	    !--index->classes[node->class].count)
		index->active &= ~(1u << node->class);
}

#endif
