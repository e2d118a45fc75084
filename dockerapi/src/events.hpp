#pragma once
// Docker's events, persisted: one JSON line each in <store>/docker/events.jsonl, appended by the
// API server (create, destroy, pause, rename, image tag/delete, ...) and by each container's
// supervisor (start, oom, die), so `GET /events` sees what happened while no server ran. A
// supervisor that died without recording its end gets its `die` from whoever notices first
// (note_lost_supervisors). The file is rotated to events.jsonl.1 past 1 MiB (Docker keeps a
// bounded buffer of events too).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "container_store.hpp"

namespace sandcell::dockerapi {

// Docker's event shape for a container: Actor.Attributes carry name, image, the labels and
// `extra` (exitCode for die, oldName for rename).
nlohmann::json container_event(const std::string& action, const std::string& id, const nlohmann::json& create_request,
                               const std::map<std::string, std::string>& extra = {});
nlohmann::json image_event(const std::string& action, const std::string& id, const std::string& name);

// Stamps time/timeNano and appends the line; a failure (full disk) loses the event, never the
// operation.
void record_event(const std::string& store_root, nlohmann::json event);
// The same for a container, reading its create.json; nothing if it is unreadable.
void record_container_event(const std::string& store_root, const ContainerDir& container, const std::string& action,
                            const std::map<std::string, std::string>& extra = {});

// Reads events appended after `offset` (of events.jsonl); returns the new offset. From 0 it
// starts with the rotated file. A rotation since the last read restarts at 0 of the new file.
struct EventCursor {
  uint64_t inode = 0, offset = 0;
};
std::vector<nlohmann::json> read_events(const std::string& store_root, EventCursor& cursor);

// Containers recorded running whose supervisor is gone: each gets its state written as exited
// (Error "supervisor gone") and one `die` event, once per supervisor.
void note_lost_supervisors(const std::string& store_root, const ContainerStore& containers);
// The same for one container (its waiters call it when their pidfd says the supervisor is
// gone); throws when the container was removed meanwhile.
void note_lost_supervisor(const std::string& store_root, const ContainerDir& container);

}  // namespace sandcell::dockerapi
