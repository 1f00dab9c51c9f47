// Round trips of PING to a redis-server, one way of waiting per run (see wait-styles.sh):
//   0 blocking write + read            1 non-blocking write, epoll_wait, read
//   2 redis-benchmark's sequence: epoll_wait writable, write, re-register, epoll_wait readable, read
//   3 blocking, with SO_RCVTIMEO        4 spinning on recv(MSG_DONTWAIT) up to 30 us, then blocking
//   5 blocking, after BUSY_US microseconds of work (not reading the socket) once the request is sent
// usage: wait-styles PORT STYLE [ROUND_TRIPS [BUSY_US]]   prints microseconds per round trip
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void must(int ok, const char* what)
{
    if (!ok) {
        perror(what);
        exit(1);
    }
}

int main(int argc, char** argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wait-styles PORT STYLE(0-5) [ROUND_TRIPS [BUSY_US]]\n");
        return 64;
    }
    const int port = atoi(argv[1]), style = atoi(argv[2]), n = argc > 3 ? atoi(argv[3]) : 16000;
    const double busy = argc > 4 ? atof(argv[4]) * 1e-6 : 0;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    must(connect(fd, (struct sockaddr*)&a, sizeof a) == 0, "connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (style == 1 || style == 2 || style == 4)
        fcntl(fd, F_SETFL, O_NONBLOCK);
    if (style == 3) {
        struct timeval tv = {3, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    const int ep = epoll_create1(0);
    struct epoll_event ev = {.events = style == 2 ? EPOLLOUT : EPOLLIN, .data.fd = fd}, out;
    must(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    char buf[64];
    const double t0 = now();
    for (int i = 0; i < n; ++i) {
        switch (style) {
        case 0:
        case 3:
            must(write(fd, ping, sizeof ping - 1) > 0, "write");
            must(read(fd, buf, sizeof buf) > 0, "read");
            break;
        case 1:
            must(write(fd, ping, sizeof ping - 1) > 0, "write");
            while (read(fd, buf, sizeof buf) < 0)
                epoll_wait(ep, &out, 1, -1);
            break;
        case 2:
            epoll_wait(ep, &out, 1, -1);
            must(write(fd, ping, sizeof ping - 1) > 0, "write");
            ev.events = EPOLLIN;
            epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
            epoll_wait(ep, &out, 1, -1);
            must(read(fd, buf, sizeof buf) > 0, "read");
            ev.events = EPOLLOUT;
            epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
            break;
        case 5: {
            must(write(fd, ping, sizeof ping - 1) > 0, "write");
            const double s = now();
            while (now() - s < busy) // the work a client might do before it waits
                ;
            must(read(fd, buf, sizeof buf) > 0, "read");
            break;
        }
        default: {
            must(write(fd, ping, sizeof ping - 1) > 0, "write");
            const double s = now();
            ssize_t got;
            while ((got = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) < 0 && now() - s < 30e-6)
                ;
            while (got < 0) {
                epoll_wait(ep, &out, 1, -1);
                got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            }
        }
        }
    }
    printf("%.1f\n", (now() - t0) / n * 1e6);
    return 0;
}
