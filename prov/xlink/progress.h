/*
 * FI_PROGRESS_AUTO: a thread per domain progresses every endpoint, so that
 * operations move while the application computes instead of reading a CQ.
 */
#ifndef XLINK_PROGRESS_H
#define XLINK_PROGRESS_H

#include "xlink.h"

/* Does info ask for automatic progress, of data or of control? */
bool xlink_progress_auto(const struct fi_info *info);

int xlink_progress_start(struct xlink_domain *domain);
/* Stops and joins the thread, if one was started. */
void xlink_progress_stop(struct xlink_domain *domain);

#endif
