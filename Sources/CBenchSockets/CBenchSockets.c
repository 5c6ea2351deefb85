// Linux only (epoll, SO_TIMESTAMPNS): elsewhere this target compiles to nothing.
#ifdef __linux__
#define _GNU_SOURCE
#include "CBenchSockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t cbench_realtime_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

int cbench_connect(const char *host, int port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) return -EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0
        || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0
        || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int cbench_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return -errno;
    return 0;
}

long cbench_send(int fd, const uint8_t *bytes, size_t length) {
    size_t sent = 0;
    while (sent < length) {
        ssize_t count = send(fd, bytes + sent, length - sent, MSG_NOSIGNAL);
        if (count < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN && sent > 0) break;
            return -errno;
        }
        sent += (size_t)count;
    }
    return (long)sent;
}

long cbench_receive(int fd, uint8_t *buffer, size_t capacity, int64_t *arrival_ns) {
    struct iovec vector = {buffer, capacity};
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    ssize_t count;
    do {
        count = recvmsg(fd, &message, 0);
    } while (count < 0 && errno == EINTR);
    if (count < 0) return -errno;
    *arrival_ns = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(header), sizeof stamp);
            *arrival_ns = (int64_t)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        }
    }
    return (long)count;
}

int cbench_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int cbench_epoll_add(int epoll_fd, int fd) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) == 0 ? 0 : -errno;
}

int cbench_epoll_wait(int epoll_fd, int32_t *ready, int capacity, int timeout_ms) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll_fd, events, capacity, timeout_ms);
    if (count < 0) return errno == EINTR ? 0 : -errno;
    for (int index = 0; index < count; index++) ready[index] = events[index].data.fd;
    return count;
}

void cbench_close(int fd) { close(fd); }

#endif  // __linux__
