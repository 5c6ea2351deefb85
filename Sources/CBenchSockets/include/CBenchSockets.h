#ifndef C_BENCH_SOCKETS_H
#define C_BENCH_SOCKETS_H

// The few socket calls `nimbus-bench push` makes itself, so that its devices and its
// writer can read the kernel's arrival time of what the server sent (SO_TIMESTAMPNS) and
// wait on many sockets at once (epoll) — neither is reachable through Glibc's Swift module.

#include <stddef.h>
#include <stdint.h>

/// CLOCK_REALTIME in nanoseconds: the clock of the kernel's receive timestamps.
int64_t cbench_realtime_ns(void);

/// Connects a TCP socket to 127.0.0.1-style IPv4 `host` (dotted quad) and `port`, with
/// TCP_NODELAY and receive timestamps on. Returns the descriptor, or -errno.
int cbench_connect(const char *host, int port);

/// Makes `fd` non-blocking. Returns 0, or -errno.
int cbench_set_nonblocking(int fd);

/// Writes all `length` bytes (blocking sockets; on a non-blocking one, as many as fit).
/// Returns the bytes written, or -errno.
long cbench_send(int fd, const uint8_t *bytes, size_t length);

/// Reads at most `capacity` bytes. Returns the count (0: the peer closed), or -errno
/// (-EAGAIN: nothing to read). `arrival_ns` is set to the kernel's receive time of the
/// last segment read (CLOCK_REALTIME), or 0 when the kernel gave none.
long cbench_receive(int fd, uint8_t *buffer, size_t capacity, int64_t *arrival_ns);

/// An epoll instance. Returns the descriptor, or -errno.
int cbench_epoll_create(void);

/// Watches `fd` for input. Returns 0, or -errno.
int cbench_epoll_add(int epoll_fd, int fd);

/// Waits up to `timeout_ms` for input; writes the ready descriptors to `ready` (at most
/// `capacity`). Returns their count (0 on timeout or EINTR), or -errno.
int cbench_epoll_wait(int epoll_fd, int32_t *ready, int capacity, int timeout_ms);

/// Closes `fd`.
void cbench_close(int fd);

#endif
