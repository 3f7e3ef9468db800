/* info_sections.h -- a statistics snapshot as the sections of Redis's INFO
 * reply ("# Server\r\nfield:value\r\n...").
 *
 * Not here: taking the snapshot (snapshot.h), parsing INFO's arguments and
 * replying (resp/info.c).
 */
#ifndef SL_SERVER_INFO_SECTIONS_H
#define SL_SERVER_INFO_SECTIONS_H

#include "server/base/buf.h"
#include "server/observe/snapshot.h"

#define SLD_INFO_ALL ((1u << SLD_SECTIONS) - 1)

/* The sections INFO's arguments ask for ("server", "all", ...: any case),
 * as a mask of 1u << sld_section_t; no argument means every section. */
unsigned sld_info_sections(const char *const *names, const size_t *lens, size_t n);

/* Appends the sections of `mask` that have a row showing in s, a blank line
 * between them, as Redis does. Text values are made one INFO line each with
 * no ',' (clients such as redis-py read "a=1,b=2" values as fields): ','
 * becomes ';' and line breaks spaces. */
void sld_info_render(const sld_snapshot_t *s, unsigned mask, sld_buf_t *out);

#endif
