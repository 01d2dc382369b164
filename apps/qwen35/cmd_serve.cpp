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
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "core/error.h"
#include "io/gguf.h"
#include "kernels/kernels.h"
#include "model/memory_need.h"
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
    "  --api-key KEY          require 'Authorization: Bearer KEY' on every route but /health and the\n"
    "                         web UI's own files (/, its scripts, style sheet and icon): the page\n"
    "                         must load to ask for the key, which it keeps in the browser\n"
    "  --cors-origin LIST     origins (scheme://host[:port], comma-separated; * for any) whose web\n"
    "                         pages may call the API (default: none but the server's own page)\n"
    "  --parallel N           conversations generating at the same time, batched (default 4, at most 64)\n"
    "  --max-queue N          requests waiting beyond those; more get 503 (default 64)\n"
    "  --cache-ram MiB        prefix cache budget shared by all conversations (default 2048)\n"
    "  --max-images N         images per request (default 16)\n"
    "  --max-image-mib N      largest image file in a request (default 20)\n"
    "  --allow-remote-images  fetch http(s) image and video URLs (off: only data: URLs)\n"
    "  --max-videos N         videos per request (default 4)\n"
    "  --max-video-mib N      largest video file in a request (default 64; also mind --max-body-mib)\n"
    "  --max-video-frames N   images of one video given as a list of frames (default 768)\n"
    "  --video-max-tokens N   most tokens of one video (default 16384: above what the official\n"
    "                         processor's budget gives any clip of 3 frames or more, so the default\n"
    "                         changes nothing, and a minute fits the default context); a clip over it\n"
    "                         gets smaller frames, and a request may ask for fewer (max_tokens on the part)\n"
    "  --max-tokens N         tokens of a chat answer when the request gives no max_tokens\n"
    "                         (default 8192; -1: up to the context); a request may ask for more\n"
    "                         (up to the context); /v1/completions defaults to 16, as OpenAI's\n"
    "  --reasoning-budget N   thinking tokens of a chat answer before the engine closes the thought\n"
    "                         and the model answers (default -1: unlimited; 0: close it at once);\n"
    "                         requests override it with reasoning_effort (low 512, medium 2048,\n"
    "                         high 8192) or chat_template_kwargs.thinking_budget\n"
    "  --open                 open the chat UI in a browser (xdg-open)\n"
    "\n"
    "limits (a request over one gets 413, 431, 408 or 503 and its connection is closed):\n"
    "  --max-body-mib N       largest request body (default 32); compressed bodies are refused (415);\n"
    "                         bodies arriving at once: 4 x N in all (503 beyond)\n"
    "  --max-header-kib N     request line and headers together (default 32)\n"
    "  --max-connections N    open connections (default 512); at the cap the oldest one that is not\n"
    "                         being answered is closed\n"
    "  --header-timeout S     seconds for a request's line and headers (default 10)\n"
    "  --body-timeout S       seconds for its body (default 120)\n"
    "  --idle-timeout S       seconds a kept-alive connection may wait for its next request (default 10)\n"
    "  A client that takes nothing of its answer for 30 s is dropped and its generation cancelled.\n"
    "\n"
    "model options (without -m: $QWEN35_DEFAULT_MODEL, else the bundled tests/data/tiny-qwen35):\n";

// "http://a.example:3000,https://b.example" -> the list; refuses anything that is not an origin.
std::vector<std::string> parse_origins(const std::string& list) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    std::string o = list.substr(i, j - i);
    while (!o.empty() && o.front() == ' ') o.erase(0, 1);
    while (!o.empty() && (o.back() == ' ' || o.back() == '/')) o.pop_back();
    const bool scheme = o.rfind("http://", 0) == 0 || o.rfind("https://", 0) == 0;
    const size_t host = o.find("://") + 3;
    if (o != "*" && (!scheme || o.size() <= host || o.find_first_of("/?#@ ", host) != std::string::npos))
      fail("option --cors-origin: '", o, "' is not an origin (scheme://host[:port], or *)");
    out.push_back(o);
    i = j + 1;
  }
  return out;
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

// A GGUF model's memory need against what this process may use, said before loading, and a model
// that cannot fit refused at once (rather than after minutes of loading, or killed mid-answer).
// Mixture-of-experts files on any device (they run on the CPU), others on the CPU; not with
// --weights, which loads other types than the file's.
void check_memory(const EngineOptions& eo, int parallel) {
  if (!eo.weights.empty() || !is_gguf_file(eo.model_dir)) return;
  const MemoryNeed need = gguf_memory_need(eo.model_dir, eo.context_size, eo.kv_type == "f32" ? DType::F32 : DType::F16);
  if (need.experts == 0 && eo.device != "cpu") return;
  const MemoryVerdict v = memory_verdict(need, usable_memory_bytes(), parallel);
  if (!v.fits) fail(v.message);
  std::fprintf(stderr, "qwen35 serve: %s\n", v.message.c_str());
}

int run_serve(int argc, char** argv) {
  std::set<std::string> with_value = {"--host",           "--port",          "--api-key",        "--parallel",
                                      "--max-queue",      "--cache-ram",     "--max-body-mib",   "--max-image-mib",
                                      "--max-images",     "--cors-origin",   "--max-header-kib", "--max-connections",
                                      "--header-timeout", "--body-timeout",  "--idle-timeout", "--reasoning-budget", "--max-tokens",
                                      "--max-videos",     "--max-video-mib", "--max-video-frames", "--video-max-tokens"};
  with_value.insert(engine_option_names().begin(), engine_option_names().end());
  Args args(argc, argv, with_value, {"--allow-remote-images", "--open", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s%s", kUsage, kEngineOptionsHelp);
    return 0;
  }
  EngineOptions eo = engine_options_from(args);

  server::ServerOptions so;
  so.host = args.get_or("--host", "127.0.0.1");
  so.port = int(args.get_int_in("--port", 8000, 0, 65535));
  so.api_key = args.get_or("--api-key", "");
  if (args.has("--api-key") && so.api_key.empty()) fail("option --api-key must not be empty");
  if (auto origins = args.get("--cors-origin")) so.cors_origins = parse_origins(*origins);
  so.worker.parallel = int(args.get_int_in("--parallel", 4, 1, 64));
  check_memory(eo, so.worker.parallel);
  so.worker.max_queue = size_t(args.get_int_in("--max-queue", 64, 0, 100000));
  so.worker.cache_bytes = size_t(args.get_int_in("--cache-ram", 2048, 0, int64_t(1) << 20)) << 20;
  so.max_body_bytes = size_t(args.get_int_in("--max-body-mib", 32, 1, 1024)) << 20;
  so.max_image_bytes = size_t(args.get_int_in("--max-image-mib", 20, 1, 1024)) << 20;
  so.max_images = size_t(args.get_int_in("--max-images", 16, 0, 256));
  so.max_videos = size_t(args.get_int_in("--max-videos", 4, 0, 64));
  so.max_video_bytes = size_t(args.get_int_in("--max-video-mib", 64, 1, 4096)) << 20;
  so.max_video_frames = size_t(args.get_int_in("--max-video-frames", 768, 1, 768));
  so.video_max_tokens = args.get_int_in("--video-max-tokens", 16384, 1, int64_t(1) << 24);
  so.max_header_bytes = size_t(args.get_int_in("--max-header-kib", 32, 1, 1024)) << 10;
  so.max_connections = size_t(args.get_int_in("--max-connections", 512, 1, 100000));
  so.header_timeout = std::chrono::seconds(args.get_int_in("--header-timeout", 10, 1, 3600));
  so.body_timeout = std::chrono::seconds(args.get_int_in("--body-timeout", 120, 1, 3600));
  so.idle_timeout = std::chrono::seconds(args.get_int_in("--idle-timeout", 10, 1, 3600));
  so.allow_remote_images = args.has("--allow-remote-images");
  so.reasoning_budget = reasoning_budget_from(args);
  so.max_tokens = args.get_int_in("--max-tokens", 8192, -1, int64_t(1) << 30);
  if (so.max_tokens == 0) fail("option --max-tokens: 0 would answer nothing; -1 means up to the context");

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
  if (server.max_connections() < so.max_connections)
    std::fprintf(stderr, "qwen35 serve: the open-file limit allows %zu connections (not %zu)\n", server.max_connections(),
                 so.max_connections);
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
    std::fprintf(stderr, "qwen35 serve: kernels: %s\n", kernels::active_table_reason().c_str());
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
