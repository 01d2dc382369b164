// An HttpServer with the tiny model on a free port of 127.0.0.1, for the raw-socket tests.
#pragma once

#include <signal.h>

#include <string>

#include <gtest/gtest.h>

#include "server/http_server.h"
#include "server_harness.h"

namespace qwen35::test {

class ServedTiny {
 public:
  explicit ServedTiny(server::ServerOptions o = defaults(), bool load = true, int64_t context = 256)
      : server_(prepare(std::move(o))) {
    std::string error;
    EXPECT_TRUE(server_.bind(&error)) << error;
    server_.start();
    if (load) server_.set_engine(load_small_engine(context));
  }
  ~ServedTiny() { server_.stop(); }

  static server::ServerOptions defaults() {
    server::ServerOptions o;
    o.worker.parallel = 2;
    o.worker.max_queue = 8;
    o.worker.cache_bytes = size_t(64) << 20;
    return o;
  }

  server::HttpServer& server() { return server_; }
  int port() const { return server_.port(); }

 private:
  static server::ServerOptions prepare(server::ServerOptions o) {
    signal(SIGPIPE, SIG_IGN);
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }
  server::HttpServer server_;
};

}  // namespace qwen35::test
