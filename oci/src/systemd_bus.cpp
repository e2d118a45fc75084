// The sd-bus half of the systemd cgroup driver: the calls runc's go-systemd makes on
// org.freedesktop.systemd1.Manager (StartTransientUnit, SetUnitProperties, StopUnit,
// ResetFailedUnit, GetUnit) and the wait for a job's JobRemoved signal.
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "sandcell/base/error.hpp"
#include "systemd_cgroup.hpp"

namespace sandcell::oci::systemd {
namespace {

constexpr const char* kService = "org.freedesktop.systemd1";
constexpr const char* kObject = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";

struct BusError {
  sd_bus_error e = SD_BUS_ERROR_NULL;
  ~BusError() { sd_bus_error_free(&e); }
};
struct Message {
  sd_bus_message* m = nullptr;
  ~Message() { sd_bus_message_unref(m); }
};
struct Slot {
  sd_bus_slot* s = nullptr;
  ~Slot() { sd_bus_slot_unref(s); }
};

void check_bus(int r, const std::string& step) {
  if (r < 0) throw Error(-r, "systemd: " + step);
}

// A failed method call, with systemd's own error name and text.
Error call_error(int r, const BusError& error, const std::string& step) {
  std::string detail = error.e.name ? std::string(" (") + error.e.name +
                                          (error.e.message ? std::string(": ") + error.e.message : "") + ")"
                                    : "";
  return Error(-r, "systemd: " + step + detail);
}

// Where sd-bus looks, for the error message (sd_bus_open_system / sd_bus_open_user).
std::string bus_address(bool user) {
  const char* set = getenv(user ? "DBUS_SESSION_BUS_ADDRESS" : "DBUS_SYSTEM_BUS_ADDRESS");
  if (set && *set) return set;
  if (!user) return "unix:path=/run/dbus/system_bus_socket";
  const char* runtime_dir = getenv("XDG_RUNTIME_DIR");
  return runtime_dir ? "unix:path=" + std::string(runtime_dir) + "/bus"
                     : "$XDG_RUNTIME_DIR/bus (XDG_RUNTIME_DIR is not set)";
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

void append_property(sd_bus_message* m, const Property& p) {
  const std::string step = "encode property " + p.name;
  check_bus(sd_bus_message_open_container(m, 'r', "sv"), step);
  check_bus(sd_bus_message_append(m, "s", p.name.c_str()), step);
  auto array = [&](const char* signature, char type, const void* data, size_t bytes) {
    check_bus(sd_bus_message_open_container(m, 'v', signature), step);
    check_bus(sd_bus_message_append_array(m, type, data, bytes), step);
    check_bus(sd_bus_message_close_container(m), step);
  };
  std::visit(Overloaded{
                 [&](bool v) { check_bus(sd_bus_message_append(m, "v", "b", v ? 1 : 0), step); },
                 [&](uint64_t v) { check_bus(sd_bus_message_append(m, "v", "t", v), step); },
                 [&](const std::string& v) { check_bus(sd_bus_message_append(m, "v", "s", v.c_str()), step); },
                 [&](const std::vector<std::string>& v) {
                   check_bus(sd_bus_message_open_container(m, 'v', "as"), step);
                   check_bus(sd_bus_message_open_container(m, 'a', "s"), step);
                   for (const std::string& s : v) check_bus(sd_bus_message_append(m, "s", s.c_str()), step);
                   check_bus(sd_bus_message_close_container(m), step);
                   check_bus(sd_bus_message_close_container(m), step);
                 },
                 [&](const std::vector<uint32_t>& v) { array("au", 'u', v.data(), v.size() * sizeof(uint32_t)); },
                 [&](const std::vector<uint8_t>& v) { array("ay", 'y', v.data(), v.size()); }},
             p.value);
  check_bus(sd_bus_message_close_container(m), step);
}

void append_properties(sd_bus_message* m, const std::vector<Property>& properties) {
  check_bus(sd_bus_message_open_container(m, 'a', "(sv)"), "encode properties");
  for (const Property& p : properties) append_property(m, p);
  check_bus(sd_bus_message_close_container(m), "encode properties");
}

// Every JobRemoved seen, job object path → result ("done", "failed", "timeout", ...). Kept
// from before the call's reply: the signal may arrive in the same read as the reply.
struct JobWatch {
  std::map<std::string, std::string> removed;
  Slot slot;
};

int on_job_removed(sd_bus_message* m, void* userdata, sd_bus_error*) {
  uint32_t id = 0;
  const char *job = nullptr, *unit = nullptr, *result = nullptr;
  if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) >= 0)
    static_cast<JobWatch*>(userdata)->removed[job] = result;
  return 0;
}

void watch_jobs(sd_bus* bus, JobWatch& watch) {
  check_bus(sd_bus_match_signal(bus, &watch.slot.s, kService, kObject, kManager, "JobRemoved",
                                on_job_removed, &watch),
            "subscribe to JobRemoved");
}

std::string wait_for_job(sd_bus* bus, JobWatch& watch, const std::string& job,
                         const std::string& what, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto it = watch.removed.find(job); it != watch.removed.end()) return it->second;
    int r = sd_bus_process(bus, nullptr);
    check_bus(r, "wait for the job of " + what);
    if (r > 0) continue;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw Error(ETIMEDOUT, "systemd: the job of " + what + " did not finish within " +
                                 std::to_string(timeout.count()) + " s");
    r = sd_bus_wait(bus, static_cast<uint64_t>(left.count()));
    if (r < 0 && r != -EINTR) check_bus(r, "wait for the job of " + what);
  }
}

void reset_failed(sd_bus* bus, const std::string& unit) {
  BusError error;
  sd_bus_call_method(bus, kService, kObject, kManager, "ResetFailedUnit", &error.e, nullptr, "s",
                     unit.c_str());  // a unit that is not failed (or gone) answers an error: fine
}

// The unit's ControlGroup property: its cgroup, absolute in the cgroup2 tree.
std::string control_group(sd_bus* bus, const std::string& unit) {
  BusError error;
  Message reply;
  int r = sd_bus_call_method(bus, kService, kObject, kManager, "GetUnit", &error.e, &reply.m, "s",
                             unit.c_str());
  if (r < 0) throw call_error(r, error, "GetUnit " + unit);
  const char* object = nullptr;
  check_bus(sd_bus_message_read(reply.m, "o", &object), "read GetUnit's answer");
  char* cgroup = nullptr;
  BusError property_error;
  const char* interface = unit.ends_with(".slice") ? "org.freedesktop.systemd1.Slice"
                                                   : "org.freedesktop.systemd1.Scope";
  r = sd_bus_get_property_string(bus, kService, object, interface, "ControlGroup",
                                 &property_error.e, &cgroup);
  if (r < 0) throw call_error(r, property_error, "read ControlGroup of " + unit);
  std::string out = cgroup;
  free(cgroup);
  if (out.empty() || out[0] != '/' || out.find("..") != std::string::npos)
    throw Error(EPROTO, "systemd: " + unit + " has no cgroup (ControlGroup '" + out + "')");
  return out;
}

}  // namespace

SystemdConnection SystemdConnection::open(bool user_manager) {
  sd_bus* bus = nullptr;
  int r = user_manager ? sd_bus_open_user(&bus) : sd_bus_open_system(&bus);
  if (r >= 0) return SystemdConnection(bus);
  std::string hint;
  if (!std::filesystem::is_directory("/run/systemd/system"))
    hint = "; no systemd runs as init here (/run/systemd/system is missing): use the cgroupfs "
           "driver (containerd: SystemdCgroup = false; kubelet: cgroupDriver: cgroupfs; podman: "
           "--cgroup-manager cgroupfs)";
  throw Error(-r, "--systemd-cgroup: cannot reach systemd's " +
                      std::string(user_manager ? "user manager on the user D-Bus (rootless)"
                                               : "system manager on the system D-Bus") +
                      " at " + bus_address(user_manager) + hint);
}

SystemdConnection::SystemdConnection(SystemdConnection&& other) noexcept
    : bus_(other.bus_) {
  other.bus_ = nullptr;
}

SystemdConnection::~SystemdConnection() {
  if (bus_) sd_bus_flush_close_unref(bus_);
}

int SystemdConnection::version() {
  char* text = nullptr;
  BusError error;
  if (sd_bus_get_property_string(bus_, kService, kObject, kManager, "Version", &error.e, &text) < 0)
    return -1;
  std::string version = text;
  free(text);
  size_t start = version.find_first_of("0123456789");
  if (start == std::string::npos) return -1;
  return std::atoi(version.c_str() + start);
}

std::string SystemdConnection::start_unit(const std::string& unit,
                                          const std::vector<Property>& properties,
                                          std::chrono::seconds timeout) {
  JobWatch watch;
  watch_jobs(bus_, watch);
  std::string job;
  for (int attempt = 0; job.empty(); ++attempt) {
    Message call, reply;
    BusError error;
    check_bus(sd_bus_message_new_method_call(bus_, &call.m, kService, kObject, kManager,
                                             "StartTransientUnit"),
              "StartTransientUnit " + unit);
    check_bus(sd_bus_message_append(call.m, "ss", unit.c_str(), "replace"), "encode " + unit);
    append_properties(call.m, properties);
    check_bus(sd_bus_message_append(call.m, "a(sa(sv))", 0), "encode " + unit);
    int r = sd_bus_call(bus_, call.m, std::chrono::microseconds(timeout).count(), &error.e, &reply.m);
    if (r < 0 && attempt == 0 && sd_bus_error_has_name(&error.e, "org.freedesktop.systemd1.UnitExists")) {
      reset_failed(bus_, unit);  // a failed leftover of that name: let systemd drop it, once
      continue;
    }
    if (r < 0) throw call_error(r, error, "StartTransientUnit " + unit);
    const char* object = nullptr;
    check_bus(sd_bus_message_read(reply.m, "o", &object), "read StartTransientUnit's answer");
    job = object;
  }
  std::string result = wait_for_job(bus_, watch, job, "starting " + unit, timeout);
  if (result != "done") {
    reset_failed(bus_, unit);
    throw Error(EIO, "systemd: starting " + unit + " ended '" + result + "', not 'done' (journalctl -u " +
                         unit + " says why)");
  }
  return control_group(bus_, unit);
}

void SystemdConnection::set_properties(const std::string& unit,
                                       const std::vector<Property>& properties) {
  if (properties.empty()) return;
  Message call, reply;
  BusError error;
  check_bus(sd_bus_message_new_method_call(bus_, &call.m, kService, kObject, kManager,
                                           "SetUnitProperties"),
            "SetUnitProperties " + unit);
  check_bus(sd_bus_message_append(call.m, "sb", unit.c_str(), 1), "encode " + unit);  // runtime
  append_properties(call.m, properties);
  int r = sd_bus_call(bus_, call.m, 0, &error.e, &reply.m);
  if (r < 0) throw call_error(r, error, "SetUnitProperties " + unit);
}

void SystemdConnection::stop_unit(const std::string& unit, std::chrono::seconds timeout) {
  JobWatch watch;
  watch_jobs(bus_, watch);
  Message reply;
  BusError error;
  int r = sd_bus_call_method(bus_, kService, kObject, kManager, "StopUnit", &error.e, &reply.m,
                             "ss", unit.c_str(), "replace");
  if (r < 0 && !sd_bus_error_has_name(&error.e, "org.freedesktop.systemd1.NoSuchUnit"))
    throw call_error(r, error, "StopUnit " + unit);
  if (r >= 0) {
    const char* object = nullptr;
    check_bus(sd_bus_message_read(reply.m, "o", &object), "read StopUnit's answer");
    // As runc: a job that ends otherwise than "done" still leaves the unit stopping; the
    // reset below lets systemd drop it.
    wait_for_job(bus_, watch, object, "stopping " + unit, timeout);
  }
  reset_failed(bus_, unit);
}

}  // namespace sandcell::oci::systemd
