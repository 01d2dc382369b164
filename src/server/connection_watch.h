// Tells a request handler that its client has gone away, so the generation it waits for can be
// cancelled (a closed browser tab, an aborted fetch, a killed curl).
//
// httplib 0.11 does not hand the socket to handlers, so the watch finds it once by the
// connection's address pair (local and remote address and port, unique among the process's open
// sockets), then polls it without reading: POLLRDHUP/POLLHUP/POLLERR mean the peer closed.
// A client that half-closes its side after sending the request reads as gone; HTTP clients do
// not do that. When no socket matches, closed() is always false (streams still notice a failed
// write).
#pragma once

#include <string>

namespace qwen35::server {

class ConnectionWatch {
 public:
  ConnectionWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  ConnectionWatch() = default;

  bool found() const { return fd_ >= 0; }
  // Cheap (one poll with zero timeout); only meaningful while the request is being handled.
  bool closed() const;

 private:
  int fd_ = -1;
};

// Shuts down the reading side of every accepted connection whose local port is `port`, so
// httplib threads waiting for a next keep-alive request wake up and end at once (used when the
// server stops; answers being written are not affected).
void end_idle_connections(int port);

}  // namespace qwen35::server
