// Closed-loop HTTP/1.1 load with a record per request, where wrk keeps only a histogram:
// N keep-alive connections to 127.0.0.1:PORT, each sends a GET, reads the whole response
// (Content-Length), sends the next. Writes one line per request to OUT:
// "<completion µs since start> <latency µs> <connection>", and the run's wall-clock start,
// so that tail-vs-gc.mjs can line the slow requests up with the proxy's GC pauses.
// Build: gcc -O2 -o /tmp/request-latency bench/tools/request-latency.c
// usage: request-latency HOST_HEADER PORT CONNS SECONDS OUT  (pin it: taskset -c 1 ...)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct { int fd; long sent; char buf[65536]; int len; } conn_t;

static long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

// Length of a complete response at the start of buf, or 0 if incomplete.
static int complete(const char *buf, int len) {
  const char *end = memmem(buf, len, "\r\n\r\n", 4);
  if (!end) return 0;
  int head = end - buf + 4;
  const char *cl = memmem(buf, head, "ontent-Length:", 14);
  if (!cl) cl = memmem(buf, head, "ontent-length:", 14);
  long body = cl ? strtol(cl + 14, NULL, 10) : 0;
  return len >= head + body ? head + (int)body : 0;
}

int main(int argc, char **argv) {
  if (argc < 6) { fprintf(stderr, "usage: lat HOST PORT CONNS SECONDS OUT\n"); return 2; }
  const char *host = argv[1];
  int port = atoi(argv[2]), n = atoi(argv[3]), secs = atoi(argv[4]);
  FILE *out = fopen(argv[5], "w");
  char req[512];
  int reqlen = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host);
  int ep = epoll_create1(0);
  conn_t *c = calloc(n, sizeof *c);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  long start = now_us();
  for (int i = 0; i < n; i++) {
    c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c[i].fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); return 1; }
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
    epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
    c[i].sent = now_us();
    write(c[i].fd, req, reqlen);
  }
  long deadline = start + secs * 1000000L, count = 0;
  struct epoll_event evs[256];
  while (now_us() < deadline) {
    int k = epoll_wait(ep, evs, 256, 100);
    for (int e = 0; e < k; e++) {
      conn_t *x = &c[evs[e].data.u32];
      int r = read(x->fd, x->buf + x->len, sizeof x->buf - x->len);
      if (r <= 0) { fprintf(stderr, "read: %d %s\n", r, strerror(errno)); return 1; }
      x->len += r;
      int used;
      while ((used = complete(x->buf, x->len)) > 0) {
        long t = now_us();
        fprintf(out, "%ld %ld %u\n", t - start, t - x->sent, evs[e].data.u32);
        count++;
        memmove(x->buf, x->buf + used, x->len - used);
        x->len -= used;
        x->sent = now_us();
        write(x->fd, req, reqlen);
      }
    }
  }
  struct timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  // wall-clock µs of this run's start (to line records up with other logs)
  fprintf(out, "# start_wall_us %ld\n", (rt.tv_sec * 1000000L + rt.tv_nsec / 1000) - ((mt.tv_sec * 1000000L + mt.tv_nsec / 1000) - start));
  fclose(out);
  fprintf(stderr, "%ld requests, %.0f req/s\n", count, count / (double)secs);
  return 0;
}
