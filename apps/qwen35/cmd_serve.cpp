// qwen35 serve: the OpenAI-compatible API server with the browser chat UI.
//
// The listener starts first and the model loads in a background thread (/health is 503 until
// it is ready). SIGINT/SIGTERM stop the server cleanly: running generations end, threads join.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "core/error.h"
#include "server/http_server.h"

extern char** environ;

namespace qwen35::app {
namespace {


const char* kUsage =
    "usage: qwen35 serve [-m MODEL_DIR] [options]\n"
    "\n"
    "An OpenAI-compatible API (/v1/chat/completions, /v1/completions, /v1/models) with a chat UI\n"
    "at http://HOST:PORT/. Without -m it serves the bundled tiny test model (random weights).\n"
    "\n"
    "options:\n"
    "  --host ADDR            address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N               port (default 8000; 0: any free port)\n"
    "  --api-key KEY          require 'Authorization: Bearer KEY' on /v1/*\n"
    "  --parallel N           conversations generating at the same time (default 2)\n"
    "  --max-queue N          requests waiting beyond those; more get 503 (default 64)\n"
    "  --ctx N                context size in tokens per conversation (default: min(model, 32768))\n"
    "  --cache-ram MiB        prefix cache budget shared by all conversations (default 2048)\n"
    "  --max-body-mib N       largest request body (default 32)\n"
    "  --max-image-mib N      largest image file in a request (default 20)\n"
    "  --max-images N         images per request (default 16)\n"
    "  --allow-remote-images  fetch http(s) image URLs (off: only data: URLs)\n"
    "  --open                 open the chat UI in a browser (xdg-open)\n"
    "\n"
    "model options (without -m: $QWEN35_DEFAULT_MODEL, else the bundled tests/data/tiny-qwen35):\n";

int64_t positive(const Args& args, const std::string& name, int64_t fallback, int64_t min = 1) {
  const int64_t v = args.get_int(name, fallback);
  if (v < min) fail("option ", name, " must be >= ", min, ", got ", v);
  return v;
}

// Opens `url` in the desktop browser, if there is one; never fails the server.
void open_browser(const std::string& url) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  char* argv[] = {const_cast<char*>("xdg-open"), const_cast<char*>(url.c_str()), nullptr};
  const int rc = posix_spawnp(&pid, "xdg-open", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::fprintf(stderr, "qwen35 serve: cannot start xdg-open; open %s yourself\n", url.c_str());
    return;
  }
  std::thread([pid] { waitpid(pid, nullptr, 0); }).detach();
}

int run_serve(int argc, char** argv) {
  std::set<std::string> with_value = {"--host",         "--port",          "--api-key",    "--parallel",
                                      "--max-queue",    "--cache-ram",     "--max-body-mib", "--max-image-mib",
                                      "--max-images"};
  with_value.insert(engine_option_names().begin(), engine_option_names().end());
  Args args(argc, argv, with_value, {"--allow-remote-images", "--open", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s%s", kUsage, kEngineOptionsHelp);
    return 0;
  }
  EngineOptions eo = engine_options_from(args, /*bundled_fallback=*/true);

  server::ServerOptions so;
  so.host = args.get_or("--host", "127.0.0.1");
  so.port = int(positive(args, "--port", 8000, 0));
  if (so.port > 65535) fail("--port must be at most 65535");
  so.api_key = args.get_or("--api-key", "");
  so.worker.parallel = int(positive(args, "--parallel", 2));
  so.worker.max_queue = size_t(positive(args, "--max-queue", 64, 0));
  so.worker.cache_bytes = size_t(positive(args, "--cache-ram", 2048, 0)) << 20;
  so.max_body_bytes = size_t(positive(args, "--max-body-mib", 32)) << 20;
  so.max_image_bytes = size_t(positive(args, "--max-image-mib", 20)) << 20;
  so.max_images = size_t(positive(args, "--max-images", 16, 0));
  so.allow_remote_images = args.has("--allow-remote-images");

  // Signals go to the sigwait below, not to whichever thread happens to run; a client that hangs
  // up must not kill the process with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGUSR1);  // the loader failed
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  server::HttpServer server(so);
  std::string error;
  if (!server.bind(&error)) fail(error);
  server.start();
  const std::string shown_host = so.host == "0.0.0.0" || so.host == "::" ? "127.0.0.1" : so.host;
  const std::string url = "http://" + (shown_host.find(':') != std::string::npos ? "[" + shown_host + "]" : shown_host) +
                          ":" + std::to_string(server.port()) + "/";
  std::fprintf(stderr, "qwen35 serve: listening on %s (loading the model; /health answers 503 until it is ready)\n",
               url.c_str());
  if (so.host != "127.0.0.1" && so.host != "localhost" && so.host != "::1" && so.api_key.empty())
    std::fprintf(stderr, "qwen35 serve: warning: listening on %s without --api-key: anyone who can reach it can use it\n",
                 so.host.c_str());
  if (args.has("--open")) open_browser(url);

  std::atomic<bool> loaded{false};
  std::string load_error;
  std::thread loader([&] {
    eo.on_progress = [](const std::string& stage, double f) {
      std::fprintf(stderr, "qwen35 serve: loading %-16s %3d%%\n", stage.c_str(), int(f * 100 + 0.5));
    };
    Status st;
    std::unique_ptr<Engine> engine = Engine::load(eo, &st);
    if (!engine) {
      load_error = st.message;
      loaded.store(true);
      kill(getpid(), SIGUSR1);
      return;
    }
    const ModelInfo& info = engine->info();
    std::fprintf(stderr,
                 "qwen35 serve: ready: model '%s' (%s), context %lld tokens, %d parallel, kernels %s, %d threads%s\n",
                 info.name.c_str(), info.has_vision ? "vision" : "text only", (long long)info.context_size,
                 so.worker.parallel, info.kernels.c_str(), info.threads, so.api_key.empty() ? "" : ", API key required");
    server.set_engine(std::move(engine));
    loaded.store(true);
  });

  int sig = 0;
  sigwait(&sigs, &sig);
  if (sig == SIGUSR1) {
    loader.join();
    server.stop();
    fail("cannot load the model: ", load_error);
  }
  std::fprintf(stderr, "qwen35 serve: stopping\n");
  if (!loaded.load()) {  // loading cannot be interrupted; nothing is served yet, so just leave
    server.stop();
    std::fflush(stderr);
    std::_Exit(130);
  }
  loader.join();
  server.stop();
  return 0;
}

}  // namespace

// Errors (qwen35::Error) are reported by main() as "qwen35 serve: message", exit status 1.
int cmd_serve(int argc, char** argv) { return run_serve(argc, argv); }

}  // namespace qwen35::app
