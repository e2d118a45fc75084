// libmicrohttpd glue: collects each request and hands it to the routes; sends what they answer.
#include "http_server.hpp"

#include <fcntl.h>
#include <microhttpd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {

struct ServerState {
  size_t max_body_bytes;
  HttpRoutes routes;
  SpoolRule spool;
};

namespace {

struct PendingRequest {
  HttpRequest request;
  uint64_t max_body_bytes = 0;
  bool too_large = false;
  std::string spool_error;  // the spool file could not be made or written: a 500 naming it
};

MHD_Result collect_query(void* cls, MHD_ValueKind, const char* key, const char* value) {
  static_cast<HttpRequest*>(cls)->query.emplace(key, value == nullptr ? "" : value);
  return MHD_YES;
}

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  std::string name = key;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static_cast<HttpRequest*>(cls)->headers.emplace(name, value == nullptr ? "" : value);
  return MHD_YES;
}

// A spooled route's file, made before the first byte arrives.
void open_spool(PendingRequest& pending, const BodySpool& spool) {
  pending.max_body_bytes = spool.max_bytes;
  int fd = ::open(spool.dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    pending.spool_error = "spool the request body in " + spool.dir + ": " + std::strerror(errno);
    return;
  }
  pending.request.body_file = std::make_shared<runtime::UniqueFd>(fd);
}

void append_body(PendingRequest& pending, const char* data, size_t size) {
  HttpRequest& request = pending.request;
  uint64_t held = request.body_file ? request.body_bytes : request.body.size();
  if (held + size > pending.max_body_bytes) {  // counted, the excess dropped
    pending.too_large = true;
    return;
  }
  if (!request.body_file) {
    request.body.append(data, size);
    return;
  }
  while (size > 0 && pending.spool_error.empty()) {
    ssize_t n = ::write(request.body_file->get(), data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      pending.spool_error = std::string("spool the request body: ") + std::strerror(errno);
      return;
    }
    request.body_bytes += static_cast<uint64_t>(n);
    data += n;
    size -= static_cast<size_t>(n);
  }
}

MHD_Result queue_buffer(MHD_Connection* connection, int status, const std::string& body, const std::string& type,
                        const std::map<std::string, std::string>& headers) {
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (!type.empty()) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type.c_str());
  for (const auto& [name, value] : headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  MHD_Result result = MHD_queue_response(connection, static_cast<unsigned>(status), response);
  MHD_destroy_response(response);
  return result;
}

ssize_t read_stream(void* cls, uint64_t, char* buffer, size_t size) {
  size_t n = (*static_cast<BodyStream*>(cls))(buffer, size);
  return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : static_cast<ssize_t>(n);
}

void free_stream(void* cls) { delete static_cast<BodyStream*>(cls); }

void run_hijack(void* cls, MHD_Connection*, void*, const char* extra_in, size_t extra_in_size, MHD_socket sock,
                MHD_UpgradeResponseHandle* handle) {
  std::unique_ptr<Hijack> hijack(static_cast<Hijack*>(cls));
  // MHD's sockets are non-blocking; the hijack's reads and writes block (a thread of its own).
  int flags = fcntl(sock, F_GETFL);
  if (flags >= 0) fcntl(sock, F_SETFL, flags & ~O_NONBLOCK);
  try {
    (*hijack)(sock, std::string(extra_in == nullptr ? "" : extra_in, extra_in_size));
  } catch (const std::exception& e) {
    fprintf(stderr, "sandcell docker-api: hijacked connection: %s\n", e.what());
  }
  MHD_upgrade_action(handle, MHD_UPGRADE_ACTION_CLOSE);
}

MHD_Result send_reply(MHD_Connection* connection, HttpReply reply) {
  MHD_Response* response = nullptr;
  if (reply.hijack) {
    response = MHD_create_response_for_upgrade(run_hijack, new Hijack(std::move(reply.hijack)));
    MHD_add_response_header(response, MHD_HTTP_HEADER_UPGRADE, "tcp");
    reply.status = MHD_HTTP_SWITCHING_PROTOCOLS;
  } else if (reply.stream) {
    response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, read_stream,
                                                 new BodyStream(std::move(reply.stream)), free_stream);
  } else {
    return queue_buffer(connection, reply.status, reply.body, reply.content_type, reply.headers);
  }
  if (!reply.content_type.empty())
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
  for (const auto& [name, value] : reply.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  MHD_Result result = MHD_queue_response(connection, static_cast<unsigned>(reply.status), response);
  MHD_destroy_response(response);
  return result;
}

std::string error_body(const std::string& message) { return nlohmann::json{{"message", message}}.dump() + "\n"; }

MHD_Result answer_too_large(MHD_Connection* connection, uint64_t max_body_bytes) {
  return queue_buffer(connection, 413, error_body("request body larger than " + std::to_string(max_body_bytes) + " bytes"),
                      "application/json", {});
}

MHD_Result answer(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                  const char* upload_data, size_t* upload_data_size, void** req_cls) {
  auto* state = static_cast<ServerState*>(cls);
  auto* pending = static_cast<PendingRequest*>(*req_cls);
  if (pending == nullptr) {
    pending = new PendingRequest;
    pending->request.method = method;
    pending->request.path = url;
    MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, collect_query, &pending->request);
    MHD_get_connection_values(connection, MHD_HEADER_KIND, collect_header, &pending->request);
    const char* upgrade = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
    pending->request.upgrade = upgrade != nullptr && strcasecmp(upgrade, "tcp") == 0;
    *req_cls = pending;
    pending->max_body_bytes = state->max_body_bytes;
    std::optional<BodySpool> spool = state->spool ? state->spool(pending->request) : std::nullopt;
    if (spool) open_spool(*pending, *spool);
    // Too large by its Content-Length: answered before the body is read (no 100 Continue);
    // MHD then closes the connection.
    const char* length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length != nullptr && std::strtoull(length, nullptr, 10) > pending->max_body_bytes) {
      pending->too_large = true;
      return answer_too_large(connection, pending->max_body_bytes);
    }
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    append_body(*pending, upload_data, *upload_data_size);
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (pending->too_large) return answer_too_large(connection, pending->max_body_bytes);
  if (!pending->spool_error.empty())
    return queue_buffer(connection, 500, error_body(pending->spool_error), "application/json", {});
  HttpReply reply;
  try {
    reply = state->routes(pending->request);
  } catch (const std::exception& e) {
    reply.status = 500;
    reply.body = error_body(e.what());
  }
  return send_reply(connection, std::move(reply));
}

void finished(void*, MHD_Connection*, void** req_cls, MHD_RequestTerminationCode) {
  delete static_cast<PendingRequest*>(*req_cls);
  *req_cls = nullptr;
}

}  // namespace

std::optional<std::string> HttpRequest::param(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> HttpRequest::params(const std::string& name) const {
  std::vector<std::string> out;
  auto [first, last] = query.equal_range(name);
  for (auto it = first; it != last; ++it) out.push_back(it->second);
  return out;
}

bool HttpRequest::flag(const std::string& name) const {
  auto value = param(name);
  return value && (*value == "1" || *value == "true" || *value == "True");
}

struct HttpServer::Daemon {
  ServerState state;
  MHD_Daemon* mhd = nullptr;
};

HttpServer::HttpServer(int listen_fd, size_t max_body_bytes, HttpRoutes routes, SpoolRule spool)
    : daemon_(std::make_unique<Daemon>(Daemon{.state = {max_body_bytes, std::move(routes), std::move(spool)}})) {
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_UPGRADE |
                   MHD_USE_ERROR_LOG;
  daemon_->mhd = MHD_start_daemon(flags, 0, nullptr, nullptr, answer, &daemon_->state,
                                  MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED, finished,
                                  nullptr, MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(256 * 1024),
                                  MHD_OPTION_END);
  if (daemon_->mhd == nullptr) throw Error(EIO, "start the HTTP server (libmicrohttpd)");
}

HttpServer::~HttpServer() { MHD_stop_daemon(daemon_->mhd); }

}  // namespace sandcell::dockerapi
