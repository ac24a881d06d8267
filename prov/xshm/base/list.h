/* An intrusive doubly linked list; struct fi_peer_rx_entry is castable to it. */
#ifndef XSHM_LIST_H
#define XSHM_LIST_H

#include <stdbool.h>
#include <stddef.h>

#define xshm_container_of(ptr, type, field) \
	((type *) ((char *) (ptr) - offsetof(type, field)))

struct xshm_dlist {
	struct xshm_dlist *next;
	struct xshm_dlist *prev;
};

static inline void xshm_dlist_init(struct xshm_dlist *head)
{
	head->next = head->prev = head;
}

static inline bool xshm_dlist_empty(const struct xshm_dlist *head)
{
	return head->next == head;
}

static inline void xshm_dlist_append(struct xshm_dlist *head,
				     struct xshm_dlist *item)
{
	item->prev = head->prev;
	item->next = head;
	head->prev->next = item;
	head->prev = item;
}

static inline void xshm_dlist_remove(struct xshm_dlist *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	item->next = item->prev = item;
}

#define xshm_dlist_foreach(head, it) \
	for ((it) = (head)->next; (it) != (head); (it) = (it)->next)

#endif
