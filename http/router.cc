// Requests, responses and the router: plain values and a list of routes;
// nothing here knows the transport (transport.cc).

#include <algorithm>
#include <cctype>
#include <exception>

#include "http/transport.h"

namespace tessera::http {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

const std::string* Find(
    const std::vector<std::pair<std::string, std::string>>& pairs,
    std::string_view name, bool any_case) {
  for (const auto& [key, value] : pairs) {
    if (any_case ? SameName(key, name) : key == name) return &value;
  }
  return nullptr;
}

}  // namespace

bool Request::has_header(std::string_view name) const {
  return Find(headers, name, true) != nullptr;
}

std::string Request::header(std::string_view name) const {
  const std::string* value = Find(headers, name, true);
  return value ? *value : std::string();
}

bool Request::has_param(std::string_view name) const {
  return Find(params, name, false) != nullptr;
}

std::string Request::param(std::string_view name) const {
  const std::string* value = Find(params, name, false);
  return value ? *value : std::string();
}

void Response::set_header(std::string name, std::string value) {
  for (auto& [key, old] : headers) {
    if (SameName(key, name)) {
      old = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

void Response::set_content(std::string content, std::string type) {
  body = std::move(content);
  content_type = std::move(type);
}

void Router::Get(const std::string& pattern, Handler handler) {
  routes_.push_back({"GET", std::regex(pattern), std::move(handler)});
}

void Router::Post(const std::string& pattern, Handler handler) {
  routes_.push_back({"POST", std::regex(pattern), std::move(handler)});
}

void Router::Dispatch(Request& req, Response& res,
                      const ErrorWriter& error) const {
  for (const Route& route : routes_) {
    if (route.method != req.method) continue;
    std::smatch match;
    if (!std::regex_match(req.path, match, route.pattern)) continue;
    req.matches.assign(match.begin(), match.end());
    try {
      if (!before_ || before_(req, res)) route.handler(req, res);
    } catch (const std::exception& e) {
      res = Response();
      error(req.path, 500, std::string("internal error: ") + e.what(), res);
    } catch (...) {
      res = Response();
      error(req.path, 500, "internal error", res);
    }
    return;
  }
  error(req.path, 404, "no route " + req.method + " " + req.path, res);
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // 127.0.0.0/8 written as a dotted quad.
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace tessera::http
