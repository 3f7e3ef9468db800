/* empty.c -- keeps the sluice_redis library non-empty while it is being built up. */
typedef int sl__redis_empty_t;
