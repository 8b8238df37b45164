/* SPDX-License-Identifier: MIT */
/*
 * hugetext oci-hook: the OCI hook that gives a container the preload, the
 * text service's socket and the shared cache, with no change to its image
 * (docs/containers.md is its contract).  The pure parts, each on buffers:
 * the runtime's state and the bundle's config.json (ocistate.c), the
 * decision, the merged ld.so.preload, the record (ocistate.c), the ELF
 * version checks of the image's loader and libc (ocielf.c) and the lines
 * of /proc/PID/mountinfo (ocistate.c).  ocihook.c does the system calls.
 */
#ifndef HTE_OCIHOOK_H
#define HTE_OCIHOOK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HTE_OCI_ANNOTATION "io.hugetext/enable"
#define HTE_OCI_STATE_MAX (1u << 20)       /* the state on stdin */
#define HTE_OCI_CONFIG_MAX (16u << 20)     /* the bundle's config.json */
#define HTE_OCI_PRELOAD_LIST_MAX 65536u    /* an image's /etc/ld.so.preload */
#define HTE_OCI_ID_MAX 128u                /* a container id, without the NUL */
#define HTE_OCI_VALUE_MAX 255u             /* an annotation's value kept, without the NUL */
#define HTE_OCI_RECORD_MAX (64u << 10)     /* a record file */

/* Where the hook keeps its records and its log (on the host). */
#define HTE_OCI_RECORDS "/run/hugetext/containers"
#define HTE_OCI_LOG "/run/hugetext/oci-hook.log"
/* What a container sees (docs/containers.md): the preload's compiled-in paths. */
#define HTE_OCI_RUN "/run/hugetext"
#define HTE_OCI_PRELOAD_NAME "libhugetext-preload.so"
/* The host's file it binds there by default: the same preload, loaded on a 2 MiB boundary. */
#define HTE_OCI_PRELOAD_PINNED "libhugetext-preload-pinned.so"
#define HTE_OCI_PRELOAD_IN HTE_OCI_RUN "/" HTE_OCI_PRELOAD_NAME
/* The per-container views of the shared cache: <cache>/shared/c/<id>. */
#define HTE_OCI_VIEWS "c"

/*
 * Says why into @why (@cap bytes; nothing when @why is NULL or @cap 0), cut
 * where it is longer: what the hook's parts give as a reason.  Returns -1,
 * so that a failure is `return hte_oci_why(err, errlen, ...)`.
 */
int hte_oci_why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- the runtime's state (stdin) and the bundle's config.json --- */

enum hte_oci_stage {
	HTE_OCI_INJECT = 0, /* status "creating": createRuntime */
	HTE_OCI_REMOVE,     /* status "stopped": poststop */
};

struct hte_oci_state {
	char id[HTE_OCI_ID_MAX + 1];
	enum hte_oci_stage stage;
	long pid;                 /* > 0 at createRuntime; 0 when absent */
	char bundle[PATH_MAX];
	int has_annotation;       /* io.hugetext/enable was given */
	int annotation_long;      /* its value was longer than HTE_OCI_VALUE_MAX (cut) */
	char annotation[HTE_OCI_VALUE_MAX + 1];
};

/*
 * Parses the OCI state (runtime-spec's state.md) in @buf: a JSON object
 * with the strings ociVersion, id, status ("creating" or "stopped") and
 * bundle (an absolute path), the number pid (required and > 0 when
 * creating), and the optional object annotations of strings.
 * Returns: 0, or -1 with the reason in @err.
 */
int hte_oci_state_parse(const char *buf, size_t len, struct hte_oci_state *st, char *err, size_t errlen);

/* 1 when @id is a container id the hook takes: 1-128 of [A-Za-z0-9_.+-], not starting with '.'. */
int hte_oci_id_valid(const char *id, size_t len);

struct hte_oci_config {
	char root[PATH_MAX];     /* root.path as given (relative to the bundle, or absolute) */
	int root_readonly;       /* root.readonly */
	int mount_ns;            /* linux.namespaces has a "mount" entry */
	int mount_ns_joined;     /* ... with a path: it joins another process's namespace */
};

/* Parses config.json.  Returns: 0, or -1 with the reason in @err. */
int hte_oci_config_parse(const char *buf, size_t len, struct hte_oci_config *c, char *err, size_t errlen);

/* --- the decision --- */

enum hte_oci_ask {
	HTE_OCI_NOT_ASKED = 0,  /* policy annotated (or off) and no annotation: nothing at all */
	HTE_OCI_ASKED,          /* inject, if the image can load the preload */
	HTE_OCI_REFUSED,        /* annotated io.hugetext/enable=0 */
	HTE_OCI_POLICY_OFF,     /* annotated, but the host's policy is containers = off */
	HTE_OCI_BAD_ANNOTATION, /* a value other than 0 or 1 */
};

/*
 * What @st asks under @policy (enum ht_conf_containers); *@why says it in
 * words for the log and the record (a static string).
 */
enum hte_oci_ask hte_oci_decide(int policy, const struct hte_oci_state *st, const char **why);

/* --- /etc/ld.so.preload --- */

/*
 * The container's ld.so.preload: the entries of the image's own file
 * @image (@len bytes; NULL or 0 when it has none), in order, one a line,
 * then @ours, once.  The loader's rules: '#' starts a comment to the end
 * of the line, entries are separated by spaces, tabs, newlines and ':'.
 * *@kept is how many of the image's entries were kept (an entry equal to
 * @ours is not counted: it is ours).
 * Returns: the length written to @out (NUL-terminated), or -1 when the
 * file holds a NUL byte or the result does not fit @cap.
 */
long hte_preload_list_merge(const char *image, size_t len, const char *ours, char *out, size_t cap,
			    unsigned *kept);

/* --- the record: /run/hugetext/containers/<id>.json --- */

struct hte_oci_record {
	char id[HTE_OCI_ID_MAX + 1];
	long pid;                       /* the container's init, as the host sees it */
	unsigned long long pid_start;   /* field 22 of /proc/PID/stat */
	unsigned long long mntns;       /* st_ino of /proc/PID/ns/mnt */
	char userns[128];               /* "host", or the uid map's first line */
	char cgroup[1024];
	char rootfs[PATH_MAX];
	char upperdir[PATH_MAX];        /* "" when the rootfs is no overlay */
	int has_annotation;
	char annotation[HTE_OCI_VALUE_MAX + 1];
	int injected;
	char reason[1024];
	int has_glibc;
	char glibc[32];
	int has_view;
	char view[PATH_MAX];            /* the host's per-container cache directory */
	long long time;                 /* unix seconds */
	/* beyond the contract's fields */
	char policy[16];                /* "annotated", "all" or "off" */
	char preload[PATH_MAX];         /* the host's preload that is bound, or "" */
	int socket;                     /* the service's socket is bound */
	unsigned kept;                  /* the image's ld.so.preload entries kept */
};

/* The record as one JSON object and a newline, malloc'ed; NULL without memory. */
char *hte_oci_record_json(const struct hte_oci_record *r);
/* Parses a record file.  Returns: 0, or -1 when it is not one. */
int hte_oci_record_parse(const char *buf, size_t len, struct hte_oci_record *r);

/* --- /proc/PID/stat, uid_map, cgroup --- */

/* Field 22 (starttime) of /proc/PID/stat text.  Returns: 0, or -1. */
int hte_stat_start_time(const char *buf, size_t len, unsigned long long *out);
/* "host" for the identity map of the initial user namespace, else the first line. */
void hte_userns_name(const char *uid_map, size_t len, char *out, size_t cap);
/* The cgroup path of /proc/PID/cgroup: the unified (0::) line's, else the first line's. */
void hte_cgroup_path(const char *buf, size_t len, char *out, size_t cap);

/* --- /proc/PID/mountinfo --- */

struct hte_mountinfo {
	unsigned long long id;
	unsigned major, minor;
	int shared;              /* the optional fields say shared:N (mounts propagate to peers) */
	char point[PATH_MAX];    /* the mount point, unescaped */
	char fstype[32];
	char upperdir[PATH_MAX]; /* overlay: upperdir= of the super options, unescaped; else "" */
};

/* The line of mount @id in mountinfo text.  Returns: 0, or -1 when absent. */
int hte_mountinfo_find(const char *buf, size_t len, unsigned long long id, struct hte_mountinfo *m);
/* Whether a mount of the device @major:@minor is in mountinfo text. */
int hte_mountinfo_has_dev(const char *buf, size_t len, unsigned major, unsigned minor);
/* The mnt_id of /proc/PID/fdinfo/FD text.  Returns: 0, or -1. */
int hte_fdinfo_mnt_id(const char *buf, size_t len, unsigned long long *out);

/* --- ocielf.c: the versions an ELF file defines and needs --- */

#define HTE_VER_NAME_MAX 48u
#define HTE_VER_DEFS_MAX 256u
#define HTE_VER_FILES_MAX 8u
#define HTE_VER_NEEDS_MAX 32u

struct hte_verneed {
	char file[HTE_VER_NAME_MAX];    /* "libc.so.6" */
	unsigned n;
	char name[HTE_VER_NEEDS_MAX][HTE_VER_NAME_MAX]; /* "GLIBC_2.34" */
};

struct hte_elf_versions {
	int elfclass;                   /* 32 or 64 */
	int msb;
	unsigned machine;               /* e_machine */
	unsigned type;                  /* e_type */
	unsigned ndef;
	char def[HTE_VER_DEFS_MAX][HTE_VER_NAME_MAX]; /* verdef names, the file's own soname first */
	unsigned nfiles;
	struct hte_verneed need[HTE_VER_FILES_MAX];
};

/*
 * Reads the ELF file in @buf: class, byte order, machine, type, its
 * version definitions and needs (SHT_GNU_verdef, SHT_GNU_verneed), and
 * the libraries it needs (DT_NEEDED) that need no version, as needs of
 * no version.
 * Returns: 0, or -1 with the reason in @err (not ELF, damaged, or more
 * versions than the struct holds).
 */
int hte_elf_versions_read(const void *buf, size_t len, struct hte_elf_versions *v, char *err, size_t errlen);

/* The highest GLIBC_x.y[.z] that @v defines, into @out ("2.36"); 0, or -1 when none. */
int hte_glibc_version(const struct hte_elf_versions *v, char *out, size_t cap);

/*
 * Whether @have defines every version of @need.  Returns: 1 when it does;
 * 0 with the missing names in @missing ("GLIBC_2.32, GLIBC_2.34").
 */
int hte_versions_cover(const struct hte_elf_versions *have, const struct hte_verneed *need, char *missing,
		       size_t cap);

/*
 * The image's dynamic loader for the preload's @machine and @elfclass
 * ("/lib64/ld-linux-x86-64.so.2"), and its multiarch triplet
 * ("x86_64-linux-gnu"); NULL for a machine hugetext is not built for.
 */
const char *hte_loader_path(unsigned machine, int elfclass);
const char *hte_multiarch(unsigned machine, int elfclass);

/* --- ocihook.c --- */
int hte_cmd_oci_hook(int argc, char **argv);

/* --- a new container's view (ociview.c) --- */

/*
 * Links into the view @vfd every entry of the shared cache @sfd (root's
 * <cache>/shared) that the container whose rootfs is @rootfs (the
 * engine's path on the host; @mounts: the host's mountinfo) shows
 * unchanged from a lower layer, named as its processes will look it up.
 * Returns 0 and *@linked, or -1 and *@why (no overlay the host sees).
 */
int hte_oci_prelink(int sfd, int vfd, const char *rootfs, const char *mounts, size_t mounts_len, unsigned *linked,
		    const char **why);

#ifdef __cplusplus
}
#endif

#endif
