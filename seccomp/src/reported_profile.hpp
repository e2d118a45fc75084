#pragma once
// The profile as compiled when denials are reported (CompileOptions::report_denials).
#include "sandcell/seccomp/program.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::seccomp {

struct ReportedProfile {
  Profile profile;                  // denying actions turned into Notify where that is exact
  NotifyPlan plan;  // how the supervisor answers each notification
};

ReportedProfile with_denials_reported(const Profile& profile);

}  // namespace sandcell::seccomp
