#include "server/connection_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace qwen35::server {
namespace {

// "127.0.0.1", 8000 for a socket address, as httplib writes them (getnameinfo, numeric).
bool address_of(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof(h), s, sizeof(s),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(s);
  return true;
}

// Calls f(fd) for every open file descriptor of this process.
template <typename F>
void for_each_fd(F f) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end || fd == dirfd(dir)) continue;
    if (f(int(fd))) break;
  }
  closedir(dir);
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  std::string host;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !address_of(addr, len, host, port)) return false;
  if (port != remote_port || host != remote_addr) return false;
  len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !address_of(addr, len, host, port)) return false;
  return port == local_port && host == local_addr;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                 int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return;
  for_each_fd([&](int fd) {
    if (!matches(fd, local_addr, local_port, remote_addr, remote_port)) return false;
    fd_ = fd;
    return true;
  });
}

void end_idle_connections(int port) {
  for_each_fd([&](int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    std::string host;
    int local_port = -1, peer_port = -1;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !address_of(addr, len, host, local_port))
      return false;
    len = sizeof(addr);
    if (local_port != port || getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        !address_of(addr, len, host, peer_port))
      return false;
    shutdown(fd, SHUT_RD);
    return false;
  });
}

bool ConnectionWatch::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace qwen35::server
