/* FI_PEER imports: what every one of them checks of the owner's context. */
#ifndef XSHM_PEER_CONTEXT_H
#define XSHM_PEER_CONTEXT_H

/* A peer context as fi_peer(3) checks it: present, whole, naming an object. */
#define XSHM_CONTEXT_OK(ctx, field) \
	((ctx) && (ctx)->size >= sizeof(*(ctx)) && (ctx)->field)

#endif
