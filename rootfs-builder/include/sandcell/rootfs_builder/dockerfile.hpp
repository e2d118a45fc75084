#pragma once
// The Dockerfile front end: Docker's syntax read into stages and instructions, plus the
// variable expansion the build executor applies per instruction.
//
// Contract with the executor (what is done here, what is left to it):
//  - parse_dockerfile() reads the parser directives (`# escape=`; `# syntax=` and `# check=` are
//    accepted and ignored), joins continuation lines, drops comments, reads heredoc bodies,
//    splits instructions into stages and checks each instruction's shape (arity, flags, forms).
//    Every error is an Error::invalid whose message starts "<filename>:<line>: ".
//  - It expands only what cannot depend on build state: the FROM lines, against the global scope
//    (Docker's predefined platform ARGs, then the ARGs before the first FROM, --build-arg winning).
//  - Every other argument is kept raw (quotes and `$` as written). Docker expands variables in
//    ADD COPY ENV EXPOSE LABEL STOPSIGNAL USER VOLUME WORKDIR, in ARG defaults and in flag values
//    (--from --chown --chmod --platform --mount ...); the executor calls expand_variables() on each
//    of those words with a lookup that sees the stage's ENV first, then its declared ARGs
//    (resolve_arg()). RUN, CMD, ENTRYPOINT, SHELL and HEALTHCHECK are never expanded by the
//    builder: the shell does it at run time.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::rootfs_builder {

// A here-document attached to RUN, COPY or ADD (`<<EOF`, `<<-EOF`, `<<"EOF"`, `3<<EOF`).
struct Heredoc {
  std::string word{};     // the marker as written on the instruction line, e.g. `<<-"EOF"`
  std::string name{};     // the delimiter without quotes: `EOF`
  std::string content{};  // body lines, each ending in '\n'; for `<<-` leading tabs already removed
  bool expand = true;     // false when any part of the delimiter was quoted: no $ expansion
  bool chomp = false;     // `<<-`
  int fd = 0;             // `3<<EOF` -> 3; 0 when not given
};

// One `key=value` of ENV or LABEL, or one `NAME[=default]` of ARG, raw (unexpanded, quotes kept):
// run key and value through expand_variables(), which also removes the quotes.
struct KeyValue {
  std::string key{};
  std::optional<std::string> value{};  // nullopt only for `ARG NAME` without a default
};

// One instruction. args, by keyword:
//   RUN CMD ENTRYPOINT SHELL  json_form: the array items; shell form: one string, the command line
//   HEALTHCHECK               args[0] "CMD" or "NONE", then the command as for CMD
//   COPY ADD VOLUME           json_form: the items; else the whitespace-separated words; for COPY
//                             and ADD the last one is the destination. A source equal to some
//                             heredocs[i].word is that heredoc's content (COPY <<EOF /dst makes a
//                             file)
//   EXPOSE                    the words (`80/tcp`)
//   ENV LABEL ARG             the raw words; the parsed pairs are in key_values
//   USER WORKDIR STOPSIGNAL MAINTAINER  one string
//   ONBUILD                   one string, the trigger as stored in the image config ("RUN make")
struct Instruction {
  std::string keyword{};  // upper case: "RUN"
  std::vector<std::string> args{};
  bool json_form = false;
  // Flags by name without the dashes: {"from","builder"}, {"chown","1000:1000"}, {"link","true"}.
  // Allowed: FROM platform; RUN network security; COPY from chown chmod link parents;
  // ADD chown chmod link checksum keep-git-dir; HEALTHCHECK interval timeout start-period
  // start-interval retries. Boolean flags hold "true" or "false".
  std::map<std::string, std::string> flags{};
  // Repeatable flags: RUN mount; COPY and ADD exclude.
  std::map<std::string, std::vector<std::string>> list_flags{};
  std::vector<KeyValue> key_values{};
  std::vector<Heredoc> heredocs{};
  std::string original{};  // the logical line as read (continuations joined, no heredoc bodies)
  int line = 0;            // first source line, 1-based
  int end_line = 0;        // last source line, heredoc bodies included
};

struct Stage {
  std::string base{};  // FROM's image after expansion: "debian:bookworm-slim", "scratch"
  std::optional<int> base_stage{};  // set when base names an earlier stage (`FROM builder`)
  std::string name{};               // the `AS` name in lower case; empty when none
  int index = 0;
  Instruction from{};  // the FROM line itself (flags: platform)
  std::vector<Instruction> instructions{};
};

struct Dockerfile {
  std::string filename{};
  char escape = '\\';
  std::vector<Instruction> global_args{};  // the ARGs before the first FROM
  // The values FROM lines saw: predefined platform args and the global ARGs that got a value.
  // A stage sees a global ARG only after re-declaring it (`ARG VERSION`): see resolve_arg().
  std::map<std::string, std::string> global_scope{};
  std::vector<Stage> stages{};

  // The stage `COPY --from=` or `FROM` names: by AS name (case-insensitive) or by index. nullopt
  // means the value is an image reference. The executor rejects a stage at or after its own.
  std::optional<int> find_stage(std::string_view name_or_index) const;
  // The stage `--target` selects (empty: the last one); Error::invalid when there is none.
  int target_stage(std::string_view target) const;
};

using BuildArgs = std::map<std::string, std::string>;  // --build-arg NAME=VALUE
using VariableLookup = std::function<std::optional<std::string>(const std::string&)>;

Dockerfile parse_dockerfile(std::string_view text, const std::string& filename,
                            const BuildArgs& build_args = {});

// One word as Docker's shell lexer reads it (no splitting on blanks): quotes removed ('...'
// literal, "..." expanding), the escape character escaping the next one, and $V, ${V},
// ${V:-word}, ${V-word}, ${V:+word}, ${V+word}, ${V:?msg}, ${V?msg} expanded with lookup (unset
// expands to ""). `where` ("Dockerfile:7") prefixes the Error::invalid of a bad substitution.
std::string expand_variables(std::string_view word, const VariableLookup& lookup, char escape,
                             const std::string& where);

// A COPY/ADD heredoc body with Heredoc::expand: like a shell here-document, $ forms expand, the
// escape character only escapes `$` and itself, quotes are literal text.
std::string expand_heredoc(std::string_view content, const VariableLookup& lookup, char escape,
                           const std::string& where);

// The argument text of ENV or LABEL: `K=V K2="V 2"` or the legacy `K V with blanks` (one pair,
// the value the rest of the line). Raw pairs, as in Instruction::key_values.
std::vector<KeyValue> parse_key_values(std::string_view text, char escape, std::string_view keyword,
                                       const std::string& where);

// Docker's rule for an ARG inside a stage: the --build-arg if given; else its default expanded
// with lookup; else the global ARG's value (global_scope); else nullopt (declared, unset).
std::optional<std::string> resolve_arg(const KeyValue& arg, const BuildArgs& build_args,
                                       const std::map<std::string, std::string>& global_scope,
                                       const VariableLookup& lookup, char escape,
                                       const std::string& where);

// TARGETPLATFORM TARGETOS TARGETARCH TARGETVARIANT BUILDPLATFORM BUILDOS BUILDARCH BUILDVARIANT for
// this host (builds are native: linux/amd64 on x86-64).
std::map<std::string, std::string> platform_args();

// HTTP_PROXY https_proxy NO_PROXY ALL_PROXY ... : usable as --build-arg without an ARG line; they
// reach RUN's environment ("K=V" here) but are not expanded in instructions and not recorded.
bool is_proxy_arg(std::string_view name);
std::vector<std::string> proxy_env(const BuildArgs& build_args);

}  // namespace sandcell::rootfs_builder
