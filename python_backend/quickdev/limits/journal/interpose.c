/*
 * quickdev's file interposer: the C library's file calls of every process of a quick-dev
 * job, seen before they change a file, so that the file journal keeps the original first.
 *
 * Loaded with LD_PRELOAD into the job and everything it starts (Python, its native
 * libraries: torch's C++ writers, SQLite, HDF5, OpenCV; programs such as cp or a shell's
 * `>>`). Each call that may change a file in the journal's scope (an open for writing, a
 * rename, a removal, a new folder or link, a truncation, a change of mode, owner or times)
 * is sent, with its absolute path, to the job's journal process
 * (quickdev/limits/journal/service.py) over a Unix socket, and goes on once the journal
 * answers 0; any other answer is the errno the call fails with (ENOSPC: the original had
 * no room to be kept). Reads, and paths out of scope (the run directory, caches, /tmp),
 * cost a flag test and a prefix comparison: nothing is sent.
 *
 * Dormant until told where the journal listens: from the environment at start
 * (QUICKDEV_JOURNAL_SOCKET, QUICKDEV_JOURNAL_SCOPE), or by quickdev_journal_activate()
 * in a process that was already running (a job forked from a warm process).
 *
 * Not seen: processes without the C library's dynamic calls (statically linked programs,
 * Go binaries), system calls made directly (syscall(2), io_uring), programs that clear
 * LD_PRELOAD (setuid ones). The end-of-job check (manifest.py) names what they change.
 *
 * Built once per machine by quickdev/limits/journal/interposer.py with the system's C
 * compiler: cc -O2 -shared -fPIC interpose.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* What a request asks; the journal process reads the same numbers (service.py, OPS). */
enum { OP_OPEN = 1, OP_RENAME, OP_UNLINK, OP_RMDIR, OP_MKDIR, OP_LINK, OP_TRUNCATE,
       OP_META, OP_EXCHANGE };
enum { META_NOFOLLOW = 1 };

#define MAX_PREFIXES 64
#define HIGH_FD 512 /* our socket moves up here, out of the way of a program's own fds */

static int active;
static char socket_name[108];
static size_t socket_name_len;
/* The scope, as quickdev/limits/journal/scope.py decides it: '-' the runs root, '+' the
 * user's tree, '~' elsewhere (left alone), each a folder prefix ending in '/'. */
static char scope_text[16384];
static const char *prefixes[MAX_PREFIXES];
static size_t prefix_lens[MAX_PREFIXES];
static char prefix_kinds[MAX_PREFIXES];
static int prefix_count;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int conn = -1;
static pid_t conn_pid;
static ino_t conn_ino;
static int said_gone;
static TLS int busy; /* this thread is inside a request: its own calls pass */

/* The C library's own function, found once (lazily: a library's constructor may call
 * before ours has run). */
static void *find(void **slot, const char *name) {
    void *found = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!found) {
        found = dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, found, __ATOMIC_RELEASE);
    }
    return found;
}
#define REAL(name) static __typeof__(name) *real_##name
#define FIND(name) ((__typeof__(real_##name))find((void **)&real_##name, #name))

REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(creat); REAL(creat64);
REAL(fopen); REAL(fopen64); REAL(freopen); REAL(freopen64);
REAL(rename); REAL(renameat); REAL(renameat2); REAL(unlink); REAL(unlinkat); REAL(rmdir);
REAL(mkdir); REAL(mkdirat); REAL(link); REAL(linkat); REAL(symlink); REAL(symlinkat);
REAL(truncate); REAL(truncate64); REAL(ftruncate); REAL(ftruncate64);
REAL(chmod); REAL(fchmod); REAL(fchmodat); REAL(chown); REAL(lchown); REAL(fchown);
REAL(fchownat); REAL(utime); REAL(utimes); REAL(lutimes); REAL(futimes); REAL(futimesat);
REAL(utimensat); REAL(futimens); REAL(mkstemp); REAL(mkostemp); REAL(mkstemps);
REAL(mkostemps); REAL(mkdtemp);

static int parse_scope(const char *text) {
    size_t len = strlen(text);
    if (len >= sizeof scope_text) return 0;
    memcpy(scope_text, text, len + 1);
    int count = 0;
    char *line = scope_text;
    while (*line && count < MAX_PREFIXES) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        if (line[0] && line[1] == '/') {
            prefix_kinds[count] = line[0];
            prefixes[count] = line + 1;
            prefix_lens[count] = strlen(line + 1);
            count++;
        }
        if (!end) break;
        line = end + 1;
    }
    prefix_count = count;
    return count;
}

EXPORT int quickdev_journal_activate(const char *name, const char *scope) {
    size_t len = strlen(name);
    if (len == 0 || len >= sizeof socket_name - 1 || !parse_scope(scope)) return -1;
    pthread_mutex_lock(&lock);
    socket_name[0] = 0; /* the abstract namespace: no file, any length of run directory */
    memcpy(socket_name + 1, name, len);
    socket_name_len = len + 1;
    conn = -1;
    said_gone = 0;
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    return 0;
}

EXPORT void quickdev_journal_deactivate(void) {
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
}

/* The calling thread's own calls pass unasked while `on` (a journal in this process puts an
 * original aside itself: asking the journal process, which may wait for the same lock,
 * would never return). */
EXPORT void quickdev_journal_pause(int on) { busy = on; }

EXPORT int quickdev_journal_active(void) {
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void) {
    /* The socket is the parent's conversation: the child opens its own. */
    if (conn >= 0) close(conn);
    conn = -1;
    pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void start(void) {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    const char *name = getenv("QUICKDEV_JOURNAL_SOCKET");
    const char *scope = getenv("QUICKDEV_JOURNAL_SCOPE");
    if (name && scope && *name) quickdev_journal_activate(name, scope);
}

/* ---- paths ---- */

/* Lexically normal, as Python's os.path.normpath makes it: no ".", "..", "//". */
static void normalize(char *path) {
    char *out = path, *in = path;
    while (*in) {
        while (*in == '/') in++;
        if (!*in) break;
        char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 1 && in[0] == '.') {
        } else if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (out > path && *(out - 1) != '/') out--;
            if (out > path) out--;
        } else {
            *out++ = '/';
            memmove(out, in, len);
            out += len;
        }
        in += len;
    }
    if (out == path) *out++ = '/';
    *out = 0;
}

/* The absolute path a call names (relative to `dirfd`, or to the working directory). */
static int absolute(int dirfd, const char *path, char *out) {
    size_t len;
    if (!path) return 0;
    if (path[0] == '/') {
        len = 0;
    } else if (dirfd == AT_FDCWD) {
        if (!getcwd(out, PATH_MAX)) return 0;
        len = strlen(out);
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t got = readlink(link, out, PATH_MAX - 1);
        if (got <= 0 || out[0] != '/') return 0;
        len = (size_t)got;
    }
    if (len) out[len++] = '/';
    size_t rest = strlen(path);
    if (len + rest >= PATH_MAX) return 0;
    memcpy(out + len, path, rest + 1);
    normalize(out);
    return 1;
}

/* The path a descriptor was opened at; 0 for a pipe, a socket, a deleted file. */
static int fd_path(int fd, char *out) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t got = readlink(link, out, PATH_MAX - 1);
    if (got <= 0 || out[0] != '/') return 0;
    out[got] = 0;
    return strstr(out, " (deleted)") == NULL;
}

static int starts_with(const char *path, size_t len, const char *prefix, size_t plen) {
    /* `path` + "/" starts with `prefix` (a folder ending in '/'). */
    if (len + 1 < plen) return 0;
    if (len + 1 == plen) return memcmp(path, prefix, len) == 0;
    return memcmp(path, prefix, plen) == 0;
}

/* Whether the journal keeps `path` (scope.py's Scope.keeps). A path left alone that is a
 * symbolic link may lead into the user's tree: the journal decides (`follows`). */
static int in_scope(const char *path, int follows) {
    size_t len = strlen(path);
    int elsewhere = 0;
    for (int i = 0; i < prefix_count; i++)
        if (prefix_kinds[i] == '-' && starts_with(path, len, prefixes[i], prefix_lens[i]))
            return 0;
    for (int i = 0; i < prefix_count; i++)
        if (prefix_kinds[i] == '+' && starts_with(path, len, prefixes[i], prefix_lens[i]))
            return 1;
    for (int i = 0; i < prefix_count; i++)
        if (prefix_kinds[i] == '~' && starts_with(path, len, prefixes[i], prefix_lens[i]))
            elsewhere = 1;
    if (!elsewhere) return 1;
    struct stat st;
    return follows && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* ---- the conversation with the journal process ---- */

static int send_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t sent = send(fd, data, len, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return 0;
        data += sent;
        len -= (size_t)sent;
    }
    return 1;
}

static int recv_all(int fd, char *data, size_t len) {
    while (len) {
        ssize_t got = recv(fd, data, len, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        data += got;
        len -= (size_t)got;
    }
    return 1;
}

static int connected(void) {
    struct stat st;
    if (conn >= 0 && conn_pid == getpid() && fstat(conn, &st) == 0 && st.st_ino == conn_ino)
        return 1;
    /* Not ours any more (a fork, a program that closed every descriptor): a new one. The
     * old number is not closed: it may be the program's now. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, socket_name, socket_name_len);
    socklen_t addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + socket_name_len);
    if (connect(fd, (struct sockaddr *)&addr, addr_len) != 0) {
        close(fd);
        return 0;
    }
    int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    fstat(fd, &st);
    conn = fd;
    conn_pid = getpid();
    conn_ino = st.st_ino;
    return 1;
}

/* Ask the journal about a change: 0 to go on, else the errno to fail with. */
static int ask(int op, int flags, const char *first, const char *second) {
    uint32_t len1 = (uint32_t)strlen(first), len2 = second ? (uint32_t)strlen(second) : 0;
    int32_t header[7] = {(int32_t)(28 + len1 + len2), op, flags, (int32_t)getpid(),
                         (int32_t)syscall(SYS_gettid), (int32_t)len1, (int32_t)len2};
    int32_t answer = EPERM;
    int saved = errno;
    busy = 1;
    pthread_mutex_lock(&lock);
    int ok = connected() && send_all(conn, (const char *)header, sizeof header) &&
             send_all(conn, first, len1) && (!len2 || send_all(conn, second, len2)) &&
             recv_all(conn, (char *)&answer, sizeof answer);
    if (!ok) {
        if (conn >= 0 && conn_pid == getpid()) close(conn);
        conn = -1;
        answer = EPERM;
        if (!said_gone) {
            said_gone = 1;
            static const char gone[] =
                "quickdev: the job's file journal has ended; this process may not change "
                "the files it keeps\n";
            ssize_t ignored = write(2, gone, sizeof gone - 1);
            (void)ignored;
        }
    }
    pthread_mutex_unlock(&lock);
    busy = 0;
    errno = saved;
    return answer;
}

static int watching(void) { return __atomic_load_n(&active, __ATOMIC_ACQUIRE) && !busy; }

static int writes(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) ||
           (flags & O_TMPFILE) == O_TMPFILE;
}

/* One path: 0 to go on (or out of scope), else the errno. */
static int check(int op, int flags, int dirfd, const char *path, int follows) {
    char abs[PATH_MAX];
    if (!watching() || !absolute(dirfd, path, abs) || !in_scope(abs, follows)) return 0;
    return ask(op, flags, abs, NULL);
}

static int check_two(int op, int flags, int dirfd1, const char *path1, int dirfd2,
                     const char *path2) {
    char abs1[PATH_MAX], abs2[PATH_MAX];
    if (!watching() || !absolute(dirfd1, path1, abs1) || !absolute(dirfd2, path2, abs2))
        return 0;
    if (!in_scope(abs1, 0) && !in_scope(abs2, 0)) return 0;
    return ask(op, flags, abs1, abs2);
}

static int check_fd(int op, int flags, int fd) {
    char path[PATH_MAX];
    if (!watching() || !fd_path(fd, path) || !in_scope(path, 0)) return 0;
    return ask(op, flags, path, NULL);
}

#define REFUSE_IF(err, failed) do { int e_ = (err); if (e_) { errno = e_; return failed; } } while (0)

static int fopen_flags(const char *mode) {
    if (!mode) return O_RDONLY;
    int plus = strchr(mode, '+') != NULL, flags;
    switch (mode[0]) {
    case 'w': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
    case 'a': flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND; break;
    default: flags = plus ? O_RDWR : O_RDONLY;
    }
    if (strchr(mode, 'x')) flags |= O_EXCL;
    return flags;
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* ---- opens ---- */

#define OPEN_AT(name, dirfd, path, flags, call)                                         \
    do {                                                                               \
        if (writes(flags)) REFUSE_IF(check(OP_OPEN, flags, dirfd, path, 1), -1);       \
        return call;                                                                   \
    } while (0)

EXPORT int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    OPEN_AT(open, AT_FDCWD, path, flags, FIND(open)(path, flags, mode));
}
EXPORT int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    OPEN_AT(open64, AT_FDCWD, path, flags, FIND(open64)(path, flags, mode));
}
EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    OPEN_AT(openat, dirfd, path, flags, FIND(openat)(dirfd, path, flags, mode));
}
EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    OPEN_AT(openat64, dirfd, path, flags, FIND(openat64)(dirfd, path, flags, mode));
}
/* The fortified forms (_FORTIFY_SOURCE) of an open without a mode. */
EXPORT int __open_2(const char *path, int flags) { return open(path, flags); }
EXPORT int __open64_2(const char *path, int flags) { return open64(path, flags); }
EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    return openat(dirfd, path, flags);
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    return openat64(dirfd, path, flags);
}
EXPORT int creat(const char *path, mode_t mode) {
    OPEN_AT(creat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, FIND(creat)(path, mode));
}
EXPORT int creat64(const char *path, mode_t mode) {
    OPEN_AT(creat64, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, FIND(creat64)(path, mode));
}
EXPORT FILE *fopen(const char *path, const char *mode) {
    if (writes(fopen_flags(mode)))
        REFUSE_IF(check(OP_OPEN, fopen_flags(mode), AT_FDCWD, path, 1), NULL);
    return FIND(fopen)(path, mode);
}
EXPORT FILE *fopen64(const char *path, const char *mode) {
    if (writes(fopen_flags(mode)))
        REFUSE_IF(check(OP_OPEN, fopen_flags(mode), AT_FDCWD, path, 1), NULL);
    return FIND(fopen64)(path, mode);
}
EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream) {
    if (path && writes(fopen_flags(mode)))
        REFUSE_IF(check(OP_OPEN, fopen_flags(mode), AT_FDCWD, path, 1), NULL);
    return FIND(freopen)(path, mode, stream);
}
EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream) {
    if (path && writes(fopen_flags(mode)))
        REFUSE_IF(check(OP_OPEN, fopen_flags(mode), AT_FDCWD, path, 1), NULL);
    return FIND(freopen64)(path, mode, stream);
}

/* ---- names: renames, removals, new folders and links ---- */

EXPORT int rename(const char *from, const char *to) {
    REFUSE_IF(check_two(OP_RENAME, 0, AT_FDCWD, from, AT_FDCWD, to), -1);
    return FIND(rename)(from, to);
}
EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to) {
    REFUSE_IF(check_two(OP_RENAME, 0, fromfd, from, tofd, to), -1);
    return FIND(renameat)(fromfd, from, tofd, to);
}
EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags) {
    int op = flags & RENAME_EXCHANGE ? OP_EXCHANGE : OP_RENAME;
    REFUSE_IF(check_two(op, 0, fromfd, from, tofd, to), -1);
    return FIND(renameat2)(fromfd, from, tofd, to, flags);
}
EXPORT int unlink(const char *path) {
    REFUSE_IF(check(OP_UNLINK, 0, AT_FDCWD, path, 0), -1);
    return FIND(unlink)(path);
}
EXPORT int unlinkat(int dirfd, const char *path, int flags) {
    REFUSE_IF(check(flags & AT_REMOVEDIR ? OP_RMDIR : OP_UNLINK, 0, dirfd, path, 0), -1);
    return FIND(unlinkat)(dirfd, path, flags);
}
EXPORT int rmdir(const char *path) {
    REFUSE_IF(check(OP_RMDIR, 0, AT_FDCWD, path, 0), -1);
    return FIND(rmdir)(path);
}
EXPORT int mkdir(const char *path, mode_t mode) {
    REFUSE_IF(check(OP_MKDIR, 0, AT_FDCWD, path, 0), -1);
    return FIND(mkdir)(path, mode);
}
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) {
    REFUSE_IF(check(OP_MKDIR, 0, dirfd, path, 0), -1);
    return FIND(mkdirat)(dirfd, path, mode);
}
EXPORT int link(const char *from, const char *to) {
    REFUSE_IF(check(OP_LINK, 0, AT_FDCWD, to, 0), -1);
    return FIND(link)(from, to);
}
EXPORT int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
    REFUSE_IF(check(OP_LINK, 0, tofd, to, 0), -1);
    return FIND(linkat)(fromfd, from, tofd, to, flags);
}
EXPORT int symlink(const char *target, const char *path) {
    REFUSE_IF(check(OP_LINK, 0, AT_FDCWD, path, 0), -1);
    return FIND(symlink)(target, path);
}
EXPORT int symlinkat(const char *target, int dirfd, const char *path) {
    REFUSE_IF(check(OP_LINK, 0, dirfd, path, 0), -1);
    return FIND(symlinkat)(target, dirfd, path);
}

/* ---- contents cut or grown in place ---- */

EXPORT int truncate(const char *path, off_t length) {
    REFUSE_IF(check(OP_TRUNCATE, 0, AT_FDCWD, path, 1), -1);
    return FIND(truncate)(path, length);
}
EXPORT int truncate64(const char *path, off64_t length) {
    REFUSE_IF(check(OP_TRUNCATE, 0, AT_FDCWD, path, 1), -1);
    return FIND(truncate64)(path, length);
}
/* A descriptor opened to write was journaled when it opened; a cut of a file opened to
 * append is the one change that open did not keep the original for. */
EXPORT int ftruncate(int fd, off_t length) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_APPEND)) REFUSE_IF(check_fd(OP_TRUNCATE, 0, fd), -1);
    return FIND(ftruncate)(fd, length);
}
EXPORT int ftruncate64(int fd, off64_t length) {
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_APPEND)) REFUSE_IF(check_fd(OP_TRUNCATE, 0, fd), -1);
    return FIND(ftruncate64)(fd, length);
}

/* ---- mode, owner and times ---- */

EXPORT int chmod(const char *path, mode_t mode) {
    REFUSE_IF(check(OP_META, 0, AT_FDCWD, path, 1), -1);
    return FIND(chmod)(path, mode);
}
EXPORT int fchmod(int fd, mode_t mode) {
    REFUSE_IF(check_fd(OP_META, 0, fd), -1);
    return FIND(fchmod)(fd, mode);
}
EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags) {
    int nofollow = flags & AT_SYMLINK_NOFOLLOW;
    REFUSE_IF(check(OP_META, nofollow ? META_NOFOLLOW : 0, dirfd, path, !nofollow), -1);
    return FIND(fchmodat)(dirfd, path, mode, flags);
}
EXPORT int chown(const char *path, uid_t owner, gid_t group) {
    REFUSE_IF(check(OP_META, 0, AT_FDCWD, path, 1), -1);
    return FIND(chown)(path, owner, group);
}
EXPORT int lchown(const char *path, uid_t owner, gid_t group) {
    REFUSE_IF(check(OP_META, META_NOFOLLOW, AT_FDCWD, path, 0), -1);
    return FIND(lchown)(path, owner, group);
}
EXPORT int fchown(int fd, uid_t owner, gid_t group) {
    REFUSE_IF(check_fd(OP_META, 0, fd), -1);
    return FIND(fchown)(fd, owner, group);
}
/* A path the C library declares never null, which Linux takes as null all the same (the
 * descriptor's own file): the test must not be optimized away. */
static const char *maybe_null(const char *path) {
    __asm__("" : "+r"(path));
    return path;
}

EXPORT int fchownat(int dirfd, const char *path, uid_t owner, gid_t group, int flags) {
    int nofollow = flags & AT_SYMLINK_NOFOLLOW;
    if (maybe_null(path) && !*path && (flags & AT_EMPTY_PATH)) {
        REFUSE_IF(check_fd(OP_META, 0, dirfd), -1);
    } else {
        REFUSE_IF(check(OP_META, nofollow ? META_NOFOLLOW : 0, dirfd, path, !nofollow), -1);
    }
    return FIND(fchownat)(dirfd, path, owner, group, flags);
}
EXPORT int utime(const char *path, const struct utimbuf *times) {
    REFUSE_IF(check(OP_META, 0, AT_FDCWD, path, 1), -1);
    return FIND(utime)(path, times);
}
EXPORT int utimes(const char *path, const struct timeval times[2]) {
    REFUSE_IF(check(OP_META, 0, AT_FDCWD, path, 1), -1);
    return FIND(utimes)(path, times);
}
EXPORT int lutimes(const char *path, const struct timeval times[2]) {
    REFUSE_IF(check(OP_META, META_NOFOLLOW, AT_FDCWD, path, 0), -1);
    return FIND(lutimes)(path, times);
}
EXPORT int futimes(int fd, const struct timeval times[2]) {
    REFUSE_IF(check_fd(OP_META, 0, fd), -1);
    return FIND(futimes)(fd, times);
}
EXPORT int futimesat(int dirfd, const char *path, const struct timeval times[2]) {
    if (maybe_null(path)) {
        REFUSE_IF(check(OP_META, 0, dirfd, path, 1), -1);
    } else {
        REFUSE_IF(check_fd(OP_META, 0, dirfd), -1);
    }
    return FIND(futimesat)(dirfd, path, times);
}
EXPORT int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags) {
    int nofollow = flags & AT_SYMLINK_NOFOLLOW;
    if (maybe_null(path)) {
        REFUSE_IF(check(OP_META, nofollow ? META_NOFOLLOW : 0, dirfd, path, !nofollow), -1);
    } else {
        REFUSE_IF(check_fd(OP_META, 0, dirfd), -1);
    }
    return FIND(utimensat)(dirfd, path, times, flags);
}
EXPORT int futimens(int fd, const struct timespec times[2]) {
    REFUSE_IF(check_fd(OP_META, 0, fd), -1);
    return FIND(futimens)(fd, times);
}

/* ---- temporary names in the user's tree ----
 * The C library makes them with its own internal open, which nothing can interpose: in
 * the journal's scope they are made here, through open() and mkdir() above, so that each
 * is known to be new before it exists. Elsewhere (/tmp) the C library's own are used. */

static void random_name(char *x) {
    static const char chars[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static unsigned long counter;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long value = (unsigned long)now.tv_nsec ^ ((unsigned long)getpid() << 16) ^
                          (__atomic_add_fetch(&counter, 7777, __ATOMIC_RELAXED) * 2654435761UL);
    for (int i = 0; i < 6; i++) {
        x[i] = chars[value % 62];
        value = value / 62 ^ (value << 7) ^ (unsigned long)now.tv_sec;
    }
}

static char *template_x(char *template, int suffix) {
    size_t len = strlen(template);
    if (suffix < 0 || len < 6 + (size_t)suffix ||
        memcmp(template + len - suffix - 6, "XXXXXX", 6) != 0)
        return NULL;
    return template + len - suffix - 6;
}

static int journaled_temp(const char *template) {
    char abs[PATH_MAX];
    return watching() && absolute(AT_FDCWD, template, abs) && in_scope(abs, 0);
}

static int make_temp(char *template, int suffix, int flags) {
    char *x = template_x(template, suffix);
    if (!x) {
        errno = EINVAL;
        return -1;
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        random_name(x);
        int fd = open(template, O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE), 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

EXPORT int mkstemp(char *template) {
    return journaled_temp(template) ? make_temp(template, 0, 0) : FIND(mkstemp)(template);
}
EXPORT int mkstemp64(char *template) { return mkstemp(template); }
EXPORT int mkostemp(char *template, int flags) {
    return journaled_temp(template) ? make_temp(template, 0, flags)
                                    : FIND(mkostemp)(template, flags);
}
EXPORT int mkostemp64(char *template, int flags) { return mkostemp(template, flags); }
EXPORT int mkstemps(char *template, int suffix) {
    return journaled_temp(template) ? make_temp(template, suffix, 0)
                                    : FIND(mkstemps)(template, suffix);
}
EXPORT int mkstemps64(char *template, int suffix) { return mkstemps(template, suffix); }
EXPORT int mkostemps(char *template, int suffix, int flags) {
    return journaled_temp(template) ? make_temp(template, suffix, flags)
                                    : FIND(mkostemps)(template, suffix, flags);
}
EXPORT int mkostemps64(char *template, int suffix, int flags) {
    return mkostemps(template, suffix, flags);
}
EXPORT char *mkdtemp(char *template) {
    if (!journaled_temp(template)) return FIND(mkdtemp)(template);
    char *x = template_x(template, 0);
    if (!x) {
        errno = EINVAL;
        return NULL;
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        random_name(x);
        if (mkdir(template, 0700) == 0) return template;
        if (errno != EEXIST) return NULL;
    }
    errno = EEXIST;
    return NULL;
}
