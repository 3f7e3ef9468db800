/* schema.c -- libcyaml's schema of the configuration file: which keys
 * exist, which are required, which are mappings or lists and how long a list
 * may be. Every scalar is a string here (raw_*_t in config_private.h): the
 * values are converted and checked by units.c, policy_config.c and config.c.
 *
 * Not here: what a value means, or any message (messages.c rewrites
 * libcyaml's errors with the path and line).
 */
#include <cyaml/cyaml.h>

#include "server/config/config.h"
#include "server/config/config_private.h"

#define OPT CYAML_FLAG_OPTIONAL
/* Mappings and lists may be written empty ("store:" with every line
 * commented out): that reads as absent. */
#define NULLABLE CYAML_FLAG_POINTER_NULL
#define STR(key, flags, type, member)                                                   \
    CYAML_FIELD_STRING_PTR(key, CYAML_FLAG_POINTER | (flags), type, member, 0,          \
                           CYAML_UNLIMITED)

static const cyaml_schema_value_t string_entry = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t limit_fields[] = {
    STR("algorithm", 0, raw_limit_t, algorithm),
    STR("limit", 0, raw_limit_t, limit),
    STR("period", 0, raw_limit_t, period),
    STR("burst", OPT, raw_limit_t, burst),
    STR("precision", OPT, raw_limit_t, precision),
    STR("shaper", OPT, raw_limit_t, shaper),
    STR("count_denied", OPT, raw_limit_t, count_denied),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t limit_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_limit_t, limit_fields),
};

static const cyaml_schema_field_t tier_fields[] = {
    STR("name", 0, raw_tier_t, name),
    CYAML_FIELD_SEQUENCE("keys", NULLABLE | OPT, raw_tier_t, keys, &string_entry, 0,
                         MAX_TIER_KEYS),
    CYAML_FIELD_SEQUENCE("limits", NULLABLE, raw_tier_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t tier_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_tier_t, tier_fields),
};

static const cyaml_schema_field_t policy_fields[] = {
    STR("name", OPT, raw_policy_t, name),  /* required: policy_config.c says so, or names it */
    CYAML_FIELD_SEQUENCE("key", NULLABLE | OPT, raw_policy_t, key, &string_entry, 0,
                         SLD_MAX_KEY_ATTRS),
    STR("mode", OPT, raw_policy_t, mode),
    STR("soft_percent", OPT, raw_policy_t, soft_percent),
    CYAML_FIELD_MAPPING_PTR("pool", NULLABLE | OPT, raw_policy_t, pool, limit_fields),
    CYAML_FIELD_SEQUENCE("limits", NULLABLE, raw_policy_t, limits, &limit_entry, 0,
                         SL_MAX_LIMITS),
    CYAML_FIELD_SEQUENCE("tiers", NULLABLE | OPT, raw_policy_t, tiers, &tier_entry, 0,
                         SLD_MAX_TIERS),
    STR("on_store_failure", OPT, raw_policy_t, on_store_failure),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t policy_entry = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_policy_t, policy_fields),
};

static const cyaml_schema_field_t listen_fields[] = {
    STR("resp", OPT, raw_listen_t, resp),
    STR("http", OPT, raw_listen_t, http),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t limits_fields[] = {
    STR("max_connections", OPT, raw_limits_t, max_connections),
    STR("max_request_bytes", OPT, raw_limits_t, max_request_bytes),
    STR("max_key_bytes", OPT, raw_limits_t, max_key_bytes),
    STR("idle_timeout", OPT, raw_limits_t, idle_timeout),
    STR("write_timeout", OPT, raw_limits_t, write_timeout),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t breaker_fields[] = {
    STR("failures", OPT, raw_breaker_t, failures),
    STR("cooldown", OPT, raw_breaker_t, cooldown),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t store_fields[] = {
    STR("type", OPT, raw_store_t, type),
    STR("url", OPT, raw_store_t, url),
    STR("sync", OPT, raw_store_t, sync),
    STR("sync_interval", OPT, raw_store_t, sync_interval),
    STR("timeout", OPT, raw_store_t, timeout),
    STR("clock", OPT, raw_store_t, clock),
    STR("on_store_failure", OPT, raw_store_t, on_store_failure),
    STR("nodes", OPT, raw_store_t, nodes),
    CYAML_FIELD_MAPPING_PTR("breaker", NULLABLE | OPT, raw_store_t, breaker, breaker_fields),
    STR("max_memory", OPT, raw_store_t, max_memory),
    STR("shards", OPT, raw_store_t, shards),
    /* off, on or a mapping: read by config_snapshot.c */
    CYAML_FIELD_IGNORE("snapshot", OPT),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t config_fields[] = {
    CYAML_FIELD_MAPPING_PTR("listen", NULLABLE | OPT, raw_config_t, listen, listen_fields),
    STR("threads", OPT, raw_config_t, threads),
    CYAML_FIELD_MAPPING_PTR("limits", NULLABLE | OPT, raw_config_t, limits, limits_fields),
    CYAML_FIELD_MAPPING_PTR("store", NULLABLE | OPT, raw_config_t, store, store_fields),
    CYAML_FIELD_SEQUENCE("trusted_proxies", NULLABLE | OPT, raw_config_t, trusted_proxies,
                         &string_entry, 0, MAX_TRUSTED_PROXIES),
    STR("ipv6_prefix", OPT, raw_config_t, ipv6_prefix),
    STR("user_header", OPT, raw_config_t, user_header),
    STR("admin_token", OPT, raw_config_t, admin_token),
    STR("requirepass", OPT, raw_config_t, requirepass),
    STR("auth_deny_status", OPT, raw_config_t, auth_deny_status),
    CYAML_FIELD_SEQUENCE("policies", NULLABLE, raw_config_t, policies, &policy_entry, 0,
                         MAX_POLICIES),
    CYAML_FIELD_END,
};

const cyaml_schema_value_t sld__cfg_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, raw_config_t, config_fields),
};
