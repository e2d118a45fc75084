// The Dockerfile front end: directives, logical lines, forms, flags, stages, heredocs, expansion.
#include "sandcell/rootfs_builder/dockerfile.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

Dockerfile parse(std::string_view text, const BuildArgs& args = {}) {
  return parse_dockerfile(text, "Dockerfile", args);
}

const Instruction& only(const Dockerfile& df) {
  EXPECT_EQ(df.stages.size(), 1u);
  EXPECT_EQ(df.stages[0].instructions.size(), 1u);
  return df.stages.at(0).instructions.at(0);
}

std::string error_of(std::string_view text) {
  try {
    parse(text);
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error());
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

VariableLookup vars(std::map<std::string, std::string> values) {
  return [values](const std::string& n) -> std::optional<std::string> {
    auto it = values.find(n);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  };
}

std::string expand(std::string_view word, std::map<std::string, std::string> values = {},
                   char escape = '\\') {
  return expand_variables(word, vars(std::move(values)), escape, "Dockerfile:1");
}

TEST(DockerfileParse, PythonSkillStyleDockerfile) {
  auto df = parse(R"(# syntax=docker/dockerfile:1
FROM debian:bookworm-slim
# system packages
RUN apt-get update && apt-get install -y --no-install-recommends \
        python3 python3-pip \
        # the venv module too
        python3-venv \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /skill
COPY requirements.txt run.py ./
ENV PYTHONUNBUFFERED=1 PATH="/skill/bin:$PATH"
CMD ["python3", "/skill/run.py"]
)");
  ASSERT_EQ(df.stages.size(), 1u);
  const auto& s = df.stages[0];
  EXPECT_EQ(s.base, "debian:bookworm-slim");
  ASSERT_EQ(s.instructions.size(), 5u);
  const auto& run = s.instructions[0];
  EXPECT_EQ(run.keyword, "RUN");
  EXPECT_FALSE(run.json_form);
  ASSERT_EQ(run.args.size(), 1u);
  EXPECT_EQ(run.args[0],
            "apt-get update && apt-get install -y --no-install-recommends         python3 "
            "python3-pip         python3-venv     && rm -rf /var/lib/apt/lists/*");
  EXPECT_EQ(run.line, 4);
  EXPECT_EQ(run.end_line, 8);
  EXPECT_EQ(s.instructions[1].args, std::vector<std::string>{"/skill"});
  EXPECT_EQ(s.instructions[2].args, (std::vector<std::string>{"requirements.txt", "run.py", "./"}));
  const auto& env = s.instructions[3];
  ASSERT_EQ(env.key_values.size(), 2u);
  EXPECT_EQ(env.key_values[1].key, "PATH");
  EXPECT_EQ(*env.key_values[1].value, "\"/skill/bin:$PATH\"");
  EXPECT_EQ(expand(*env.key_values[1].value, {{"PATH", "/usr/bin"}}), "/skill/bin:/usr/bin");
  const auto& cmd = s.instructions[4];
  EXPECT_TRUE(cmd.json_form);
  EXPECT_EQ(cmd.args, (std::vector<std::string>{"python3", "/skill/run.py"}));
}

TEST(DockerfileParse, MultiStageWithArgBeforeFrom) {
  auto df = parse(R"(ARG GO_VERSION=1.22
ARG BASE=debian
FROM golang:${GO_VERSION}-bookworm AS Build
ARG GO_VERSION
RUN go build -o /out/app ./cmd/app
FROM ${BASE}:bookworm-slim
COPY --from=build /out/app /usr/local/bin/app
ENTRYPOINT ["/usr/local/bin/app"]
)",
                  {{"BASE", "ubuntu"}});
  ASSERT_EQ(df.global_args.size(), 2u);
  ASSERT_EQ(df.stages.size(), 2u);
  EXPECT_EQ(df.stages[0].base, "golang:1.22-bookworm");
  EXPECT_EQ(df.stages[0].name, "build");
  EXPECT_EQ(df.stages[1].base, "ubuntu:bookworm-slim");
  EXPECT_EQ(df.stages[1].name, "");
  EXPECT_EQ(df.stages[1].index, 1);
  const auto& copy = df.stages[1].instructions[0];
  EXPECT_EQ(copy.flags.at("from"), "build");
  EXPECT_EQ(df.find_stage(copy.flags.at("from")), 0);
  EXPECT_EQ(df.find_stage("BUILD"), 0);
  EXPECT_EQ(df.find_stage("1"), 1);
  EXPECT_EQ(df.find_stage("2"), std::nullopt);
  EXPECT_EQ(df.find_stage("alpine:3.19"), std::nullopt);
  EXPECT_EQ(df.target_stage(""), 1);
  EXPECT_EQ(df.target_stage("build"), 0);
  EXPECT_THROW(df.target_stage("nope"), Error);
}

TEST(DockerfileParse, GlobalArgIsVisibleInStageOnlyWhenRedeclared) {
  auto df = parse("ARG V=1.0\nFROM scratch\nARG V\nARG W=${V}-x\n");
  const auto& args = df.stages[0].instructions;
  std::map<std::string, std::string> stage_args;
  VariableLookup stage_lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = stage_args.find(n);
    return it == stage_args.end() ? std::nullopt : std::optional(it->second);
  };
  // Before the stage re-declares V, it is not in scope: only the global scope has it.
  EXPECT_EQ(df.global_scope.at("V"), "1.0");
  EXPECT_EQ(stage_lookup("V"), std::nullopt);
  auto v = resolve_arg(args[0].key_values[0], {}, df.global_scope, stage_lookup, '\\', "x");
  stage_args["V"] = *v;
  EXPECT_EQ(*v, "1.0");
  auto w = resolve_arg(args[1].key_values[0], {}, df.global_scope, stage_lookup, '\\', "x");
  EXPECT_EQ(*w, "1.0-x");
  auto overridden =
      resolve_arg(args[1].key_values[0], {{"W", "cli"}}, df.global_scope, stage_lookup, '\\', "x");
  EXPECT_EQ(*overridden, "cli");
  KeyValue unset{.key = "NOPE", .value = std::nullopt};
  EXPECT_EQ(resolve_arg(unset, {}, df.global_scope, stage_lookup, '\\', "x"), std::nullopt);
}

TEST(DockerfileParse, PredefinedPlatformArgsInGlobalScope) {
  auto df = parse("FROM --platform=$BUILDPLATFORM alpine AS b\nFROM img-${TARGETARCH}\n");
  EXPECT_EQ(df.stages[0].from.flags.at("platform"), "$BUILDPLATFORM");
  EXPECT_EQ(df.global_scope.at("TARGETOS"), "linux");
  EXPECT_EQ(df.stages[1].base, "img-" + platform_args().at("TARGETARCH"));
#if defined(__x86_64__)
  EXPECT_EQ(platform_args().at("TARGETPLATFORM"), "linux/amd64");
  EXPECT_EQ(platform_args().at("BUILDARCH"), "amd64");
#endif
}

TEST(DockerfileParse, ProxyArgsNeedNoDeclarationAndReachRunEnv) {
  EXPECT_TRUE(is_proxy_arg("HTTP_PROXY"));
  EXPECT_TRUE(is_proxy_arg("no_proxy"));
  EXPECT_FALSE(is_proxy_arg("PROXY"));
  auto env = proxy_env({{"https_proxy", "http://p:3128"}, {"OTHER", "x"}});
  EXPECT_EQ(env, std::vector<std::string>{"https_proxy=http://p:3128"});
}

TEST(DockerfileParse, FromStageNameSetsBaseStage) {
  auto df = parse("FROM alpine AS base\nFROM base AS test\nFROM Base\n");
  EXPECT_EQ(df.stages[1].base_stage, 0);
  EXPECT_EQ(df.stages[2].base_stage, 0);
  EXPECT_EQ(df.stages[0].base_stage, std::nullopt);
}

TEST(DockerfileParse, ScratchBase) {
  auto df = parse("FROM scratch\nCOPY app /\n");
  EXPECT_EQ(df.stages[0].base, "scratch");
}

TEST(DockerfileParse, EscapeDirectiveBacktickContinuesLines) {
  auto df = parse("# escape=`\nFROM scratch\nRUN dir c:\\ `\n    && echo ok\n");
  EXPECT_EQ(df.escape, '`');
  EXPECT_EQ(only(df).args[0], "dir c:\\     && echo ok");
}

TEST(DockerfileParse, DirectivesOnlyAtTop) {
  auto df = parse("FROM scratch\n# escape=`\nRUN a \\\n b\n");
  EXPECT_EQ(df.escape, '\\');
  EXPECT_EQ(only(df).args[0], "a  b");
  // A comment ends the directives: the escape line after it is a comment.
  EXPECT_EQ(parse("# hello\n# escape=`\nFROM scratch\n").escape, '\\');
  // So does a blank line.
  EXPECT_EQ(parse("\n# escape=`\nFROM scratch\n").escape, '\\');
}

TEST(DockerfileParse, DirectiveWhitespaceAndCaseTolerated) {
  EXPECT_EQ(parse("#  EsCaPe = `\nFROM scratch\n").escape, '`');
}

TEST(DockerfileParse, SyntaxAndCheckDirectivesIgnored) {
  auto df = parse("# syntax=docker/dockerfile:1.7\n# check=skip=all\n# escape=`\nFROM scratch\n");
  EXPECT_EQ(df.escape, '`');
}

TEST(DockerfileParse, RepeatedDirectiveRejected) {
  EXPECT_NE(error_of("# escape=`\n# escape=\\\nFROM scratch\n")
                .find("Dockerfile:2: only one escape parser directive"),
            std::string::npos);
}

TEST(DockerfileParse, InvalidEscapeTokenRejected) {
  EXPECT_NE(error_of("# escape=x\nFROM scratch\n").find("invalid escape token"), std::string::npos);
}

TEST(DockerfileParse, ContinuationWithCommentsAndEmptyLines) {
  auto df = parse("FROM scratch\nRUN echo a \\\n# comment\n\n   # indented comment\n  b\n");
  EXPECT_EQ(only(df).args[0], "echo a   b");
  EXPECT_EQ(only(df).end_line, 6);
}

TEST(DockerfileParse, EscapedEscapeAtEndDoesNotContinue) {
  auto df = parse("FROM scratch\nRUN echo \\\\\nRUN true\n");
  ASSERT_EQ(df.stages[0].instructions.size(), 2u);
  EXPECT_EQ(df.stages[0].instructions[0].args[0], "echo \\\\");
}

TEST(DockerfileParse, InlineHashIsNotAComment) {
  EXPECT_EQ(only(parse("FROM scratch\nRUN echo hi # there\n")).args[0], "echo hi # there");
}

TEST(DockerfileParse, CrLfAndBomAccepted) {
  auto df = parse(
      "\xEF\xBB\xBF"
      "FROM scratch\r\nRUN a \\\r\n b\r\n");
  EXPECT_EQ(only(df).args[0], "a  b");
}

TEST(DockerfileParse, KeywordsCaseInsensitive) {
  auto df = parse("from scratch\nworkdir /x\n");
  EXPECT_EQ(only(df).keyword, "WORKDIR");
}

TEST(DockerfileParse, UnknownInstructionNamesFileAndLine) {
  auto msg = error_of("FROM scratch\n\nFROBNICATE now\n");
  EXPECT_EQ(msg, "Dockerfile:3: unknown instruction: FROBNICATE");
}

TEST(DockerfileParse, SyntaxErrorNamesFileAndLine) {
  EXPECT_EQ(
      error_of("FROM scratch\nCOPY onlyone\n").rfind("Dockerfile:2: COPY requires at least two", 0),
      0u);
  EXPECT_EQ(error_of("FROM scratch\nWORKDIR\n"),
            "Dockerfile:2: WORKDIR requires exactly one argument");
  EXPECT_EQ(error_of("FROM a b\n"), "Dockerfile:1: FROM requires either one or three arguments");
  EXPECT_EQ(
      error_of("FROM scratch\nENV A=1 B\n").rfind("Dockerfile:2: syntax error - can't find =", 0),
      0u);
  EXPECT_EQ(error_of("FROM scratch\nENV A\n"), "Dockerfile:2: ENV must have two arguments");
  EXPECT_EQ(error_of("FROM scratch\nSHELL /bin/bash -c\n"),
            "Dockerfile:2: SHELL requires the arguments to be in JSON form");
}

TEST(DockerfileParse, InstructionBeforeFromRejected) {
  EXPECT_EQ(error_of("RUN true\nFROM scratch\n").rfind("Dockerfile:1: no build stage", 0), 0u);
}

TEST(DockerfileParse, EmptyFileRejected) {
  EXPECT_EQ(error_of("# just a comment\n\n"), "Dockerfile: file with no instructions");
  EXPECT_NE(error_of("ARG A=1\n").find("no FROM"), std::string::npos);
}

TEST(DockerfileParse, InvalidAndDuplicateStageNamesRejected) {
  EXPECT_NE(error_of("FROM a AS 1st\n").find("invalid name for build stage"), std::string::npos);
  EXPECT_EQ(error_of("FROM a AS x\nFROM b AS X\n"), "Dockerfile:2: duplicate stage name \"x\"");
}

TEST(DockerfileParse, BlankBaseAfterExpansionRejected) {
  EXPECT_NE(error_of("FROM ${NOTHING}\n").find("should not be blank"), std::string::npos);
}

TEST(DockerfileParse, ExecFormJsonArray) {
  auto ins = only(parse("FROM scratch\nENTRYPOINT [ \"/bin/sh\", \"-c\", \"echo \\\"hi\\\"\" ]\n"));
  EXPECT_TRUE(ins.json_form);
  EXPECT_EQ(ins.args, (std::vector<std::string>{"/bin/sh", "-c", "echo \"hi\""}));
}

TEST(DockerfileParse, InvalidJsonFallsBackToShellForm) {
  auto ins = only(parse("FROM scratch\nCMD ['single', 'quotes']\n"));
  EXPECT_FALSE(ins.json_form);
  EXPECT_EQ(ins.args, std::vector<std::string>{"['single', 'quotes']"});
  auto copy = only(parse("FROM scratch\nCOPY [a b]\n"));
  EXPECT_FALSE(copy.json_form);
  EXPECT_EQ(copy.args, (std::vector<std::string>{"[a", "b]"}));
}

TEST(DockerfileParse, JsonArrayOfNonStringsRejected) {
  EXPECT_NE(error_of("FROM scratch\nCMD [1, 2]\n").find("arrays must be comprised of strings only"),
            std::string::npos);
}

TEST(DockerfileParse, EmptyExecFormCmdAllowed) {
  auto ins = only(parse("FROM scratch\nCMD []\n"));
  EXPECT_TRUE(ins.json_form);
  EXPECT_TRUE(ins.args.empty());
}

TEST(DockerfileParse, CopyFlagsKept) {
  auto ins =
      only(parse("FROM scratch\nCOPY --from=builder --chown=app:app --chmod=0755 --link "
                 "--exclude=*.md --exclude=tests /src/ /dst/\n"));
  EXPECT_EQ(ins.flags.at("from"), "builder");
  EXPECT_EQ(ins.flags.at("chown"), "app:app");
  EXPECT_EQ(ins.flags.at("chmod"), "0755");
  EXPECT_EQ(ins.flags.at("link"), "true");
  EXPECT_EQ(ins.list_flags.at("exclude"), (std::vector<std::string>{"*.md", "tests"}));
  EXPECT_EQ(ins.args, (std::vector<std::string>{"/src/", "/dst/"}));
}

TEST(DockerfileParse, AddChecksumAndUrl) {
  auto ins =
      only(parse("FROM scratch\nADD --checksum=sha256:abc https://example.test/x.tar.gz /x/\n"));
  EXPECT_EQ(ins.flags.at("checksum"), "sha256:abc");
  EXPECT_EQ(ins.args[0], "https://example.test/x.tar.gz");
}

TEST(DockerfileParse, RunMountNetworkSecurityKept) {
  auto ins =
      only(parse("FROM scratch\nRUN --mount=type=cache,target=/root/.cache "
                 "--mount=type=tmpfs,target=/tmp --network=none --security=sandbox make\n"));
  EXPECT_EQ(ins.list_flags.at("mount").size(), 2u);
  EXPECT_EQ(ins.flags.at("network"), "none");
  EXPECT_EQ(ins.flags.at("security"), "sandbox");
  EXPECT_EQ(ins.args, std::vector<std::string>{"make"});
}

TEST(DockerfileParse, QuotedFlagValueUnquoted) {
  auto ins = only(parse("FROM scratch\nCOPY --chown=\"1000:1000\" a /b\n"));
  EXPECT_EQ(ins.flags.at("chown"), "1000:1000");
}

TEST(DockerfileParse, BadFlagsRejected) {
  EXPECT_EQ(error_of("FROM scratch\nCOPY --bogus=1 a b\n"), "Dockerfile:2: unknown flag: --bogus");
  EXPECT_EQ(error_of("FROM scratch\nENV --x=1 A=b\n"), "Dockerfile:2: unknown flag: --x");
  EXPECT_EQ(error_of("FROM scratch\nCOPY --from a b\n"),
            "Dockerfile:2: missing a value on flag: --from");
  EXPECT_EQ(error_of("FROM scratch\nCOPY --from=a --from=b a b\n"),
            "Dockerfile:2: duplicate flag specified: --from");
  EXPECT_NE(error_of("FROM scratch\nCOPY --link=maybe a b\n").find("expecting boolean"),
            std::string::npos);
}

TEST(DockerfileParse, EnvBothForms) {
  auto df = parse("FROM scratch\nENV A=1 B=\"two words\" C=x\\ y\nENV LEGACY hello   world\n");
  const auto& modern = df.stages[0].instructions[0].key_values;
  ASSERT_EQ(modern.size(), 3u);
  EXPECT_EQ(expand(*modern[1].value), "two words");
  EXPECT_EQ(expand(*modern[2].value), "x y");
  const auto& legacy = df.stages[0].instructions[1].key_values;
  ASSERT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy[0].key, "LEGACY");
  EXPECT_EQ(*legacy[0].value, "hello   world");
}

TEST(DockerfileParse, LabelMultipleAndQuotedKeys) {
  auto ins =
      only(parse("FROM scratch\nLABEL \"com.example.vendor\"=\"ACME Inc\" version=1.0 \\\n"
                 "      description=\"multi \\\n word\"\n"));
  ASSERT_EQ(ins.key_values.size(), 3u);
  EXPECT_EQ(expand(ins.key_values[0].key), "com.example.vendor");
  EXPECT_EQ(expand(*ins.key_values[0].value), "ACME Inc");
  EXPECT_EQ(expand(*ins.key_values[2].value), "multi  word");
}

TEST(DockerfileParse, ParseKeyValuesDirect) {
  auto kvs = parse_key_values("a='x y' b=$B", '\\', "ENV", "Dockerfile:1");
  ASSERT_EQ(kvs.size(), 2u);
  EXPECT_EQ(expand(*kvs[0].value), "x y");
  EXPECT_EQ(expand(*kvs[1].value, {{"B", "bee"}}), "bee");
}

TEST(DockerfileParse, ArgWithAndWithoutDefaults) {
  auto ins = only(parse("FROM scratch\nARG A B=2 C=\n"));
  ASSERT_EQ(ins.key_values.size(), 3u);
  EXPECT_EQ(ins.key_values[0].value, std::nullopt);
  EXPECT_EQ(*ins.key_values[1].value, "2");
  EXPECT_EQ(*ins.key_values[2].value, "");
}

TEST(DockerfileParse, ExposeVolumeUserWorkdirStopsignal) {
  auto df = parse(
      "FROM scratch\nEXPOSE 80/tcp 53/udp 8080\nVOLUME [\"/data\", \"/logs\"]\n"
      "VOLUME /a /b\nUSER app:app\nWORKDIR /srv/app\nSTOPSIGNAL SIGQUIT\nMAINTAINER me\n");
  const auto& is = df.stages[0].instructions;
  EXPECT_EQ(is[0].args, (std::vector<std::string>{"80/tcp", "53/udp", "8080"}));
  EXPECT_TRUE(is[1].json_form);
  EXPECT_EQ(is[1].args, (std::vector<std::string>{"/data", "/logs"}));
  EXPECT_EQ(is[2].args, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(is[3].args, std::vector<std::string>{"app:app"});
  EXPECT_EQ(is[4].args, std::vector<std::string>{"/srv/app"});
  EXPECT_EQ(is[5].args, std::vector<std::string>{"SIGQUIT"});
  EXPECT_EQ(is[6].keyword, "MAINTAINER");
}

TEST(DockerfileParse, ShellInstruction) {
  auto ins = only(parse("FROM scratch\nSHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\n"));
  EXPECT_EQ(ins.args.size(), 4u);
}

TEST(DockerfileParse, HealthcheckForms) {
  auto df = parse(
      "FROM scratch\nHEALTHCHECK --interval=30s --retries=3 CMD curl -f http://localhost/\n"
      "HEALTHCHECK CMD [\"/bin/check\", \"-q\"]\nHEALTHCHECK none\n");
  const auto& is = df.stages[0].instructions;
  EXPECT_EQ(is[0].flags.at("interval"), "30s");
  EXPECT_EQ(is[0].args, (std::vector<std::string>{"CMD", "curl -f http://localhost/"}));
  EXPECT_FALSE(is[0].json_form);
  EXPECT_TRUE(is[1].json_form);
  EXPECT_EQ(is[1].args, (std::vector<std::string>{"CMD", "/bin/check", "-q"}));
  EXPECT_EQ(is[2].args, std::vector<std::string>{"NONE"});
  EXPECT_NE(error_of("FROM scratch\nHEALTHCHECK PING x\n").find("try CMD"), std::string::npos);
  EXPECT_NE(error_of("FROM scratch\nHEALTHCHECK NONE x\n").find("takes no arguments"),
            std::string::npos);
}

TEST(DockerfileParse, OnbuildKeptAsTriggerText) {
  auto ins = only(parse("FROM scratch\nONBUILD RUN make install\n"));
  EXPECT_EQ(ins.args, std::vector<std::string>{"RUN make install"});
  EXPECT_NE(error_of("FROM scratch\nONBUILD ONBUILD RUN x\n").find("isn't allowed"),
            std::string::npos);
  EXPECT_NE(error_of("FROM scratch\nONBUILD FROM x\n").find("isn't allowed"), std::string::npos);
  EXPECT_EQ(error_of("FROM scratch\nONBUILD NOPE x\n"), "Dockerfile:2: unknown instruction: NOPE");
}

TEST(DockerfileParse, OriginalTextKept) {
  auto ins = only(parse("FROM scratch\n  RUN   echo \\\n  hi\n"));
  EXPECT_EQ(ins.original, "RUN   echo   hi");
  EXPECT_EQ(ins.line, 2);
}

TEST(DockerfileHeredoc, RunHeredocBodyRead) {
  auto df = parse("FROM scratch\nRUN <<EOF\napt-get update\necho $HOME\nEOF\nRUN true\n");
  const auto& run = df.stages[0].instructions[0];
  EXPECT_EQ(run.args, std::vector<std::string>{"<<EOF"});
  ASSERT_EQ(run.heredocs.size(), 1u);
  EXPECT_EQ(run.heredocs[0].name, "EOF");
  EXPECT_EQ(run.heredocs[0].content, "apt-get update\necho $HOME\n");
  EXPECT_TRUE(run.heredocs[0].expand);
  EXPECT_EQ(run.end_line, 5);
  EXPECT_EQ(df.stages[0].instructions[1].line, 6);
}

TEST(DockerfileHeredoc, QuotedDelimiterDisablesExpansion) {
  for (auto marker : {"<<\"EOF\"", "<<'EOF'", "<<E\"OF\""}) {
    auto ins = only(parse(std::string("FROM scratch\nRUN cat ") + marker + " > /x\nhi $V\nEOF\n"));
    ASSERT_EQ(ins.heredocs.size(), 1u) << marker;
    EXPECT_FALSE(ins.heredocs[0].expand) << marker;
    EXPECT_EQ(ins.heredocs[0].name, "EOF");
    EXPECT_EQ(ins.heredocs[0].word, marker);
  }
}

TEST(DockerfileHeredoc, ChompStripsLeadingTabs) {
  auto ins = only(parse("FROM scratch\nRUN <<-EOT\n\tline one\n\t\tline two\n\tEOT\n"));
  EXPECT_TRUE(ins.heredocs[0].chomp);
  EXPECT_EQ(ins.heredocs[0].content, "line one\nline two\n");
}

TEST(DockerfileHeredoc, MultipleHeredocsAndFd) {
  auto ins = only(parse("FROM scratch\nRUN cat <<A 3<<B\na\nA\nb\nB\n"));
  ASSERT_EQ(ins.heredocs.size(), 2u);
  EXPECT_EQ(ins.heredocs[0].content, "a\n");
  EXPECT_EQ(ins.heredocs[1].content, "b\n");
  EXPECT_EQ(ins.heredocs[1].fd, 3);
}

TEST(DockerfileHeredoc, CopyHeredocCreatesFileSource) {
  auto ins = only(parse("FROM scratch\nCOPY <<EOF /etc/app.conf\nport=${PORT}\nEOF\n"));
  EXPECT_EQ(ins.args, (std::vector<std::string>{"<<EOF", "/etc/app.conf"}));
  ASSERT_EQ(ins.heredocs.size(), 1u);
  EXPECT_EQ(ins.heredocs[0].word, ins.args[0]);
  EXPECT_EQ(expand_heredoc(ins.heredocs[0].content, vars({{"PORT", "80"}}), '\\', "x"),
            "port=80\n");
}

TEST(DockerfileHeredoc, HeredocAsDestinationRejected) {
  EXPECT_NE(error_of("FROM scratch\nCOPY a <<EOF\nx\nEOF\n").find("destination"),
            std::string::npos);
}

// COPY and ADD use a heredoc's name as the file's name in the staging directory and at the
// destination: a name with '/' or a ".." reached host paths (issue 37, item 1).
TEST(DockerfileHeredoc, NameThatIsNoSingleFileNameRejected) {
  for (const std::string name : {"../../../../tmp/x/newfile", "a/b", "..", ".", "/abs"}) {
    std::string error = error_of("FROM scratch\nCOPY --chmod=755 <<" + name + " /d1/d2/\nbody\n" + name + "\n");
    EXPECT_NE(error.find("heredoc name '" + name + "' must be a file name"), std::string::npos) << name << ": " << error;
  }
  EXPECT_NO_THROW(parse("FROM scratch\nCOPY <<name.txt /d/\nbody\nname.txt\n"));
}

TEST(DockerfileHeredoc, UnterminatedRejected) {
  EXPECT_EQ(
      error_of("FROM scratch\nRUN <<EOF\nno end\n").rfind("Dockerfile:2: unterminated heredoc", 0),
      0u);
}

TEST(DockerfileHeredoc, JsonFormAndOtherInstructionsTakeNoHeredoc) {
  auto df =
      parse("FROM scratch\nRUN [\"sh\", \"-c\", \"cat <<EOF\"]\nLABEL a=\"<<EOF\"\nRUN true\n");
  EXPECT_EQ(df.stages[0].instructions.size(), 3u);
  EXPECT_TRUE(df.stages[0].instructions[0].heredocs.empty());
}

TEST(DockerfileHeredoc, ExpandHeredocKeepsQuotes) {
  EXPECT_EQ(expand_heredoc("echo \"$A\" '$A' \\$A\n", vars({{"A", "1"}}), '\\', "x"),
            "echo \"1\" '1' $A\n");
}

TEST(DockerfileExpand, PlainAndBraced) {
  EXPECT_EQ(expand("$A/${B}/c", {{"A", "a"}, {"B", "b"}}), "a/b/c");
  EXPECT_EQ(expand("${A}_x $A_x", {{"A", "a"}, {"A_x", "ax"}}), "a_x ax");
  EXPECT_EQ(expand("$UNSET-end"), "-end");
  EXPECT_EQ(expand("cost: $"), "cost: $");
}

TEST(DockerfileExpand, DefaultAndAlternate) {
  std::map<std::string, std::string> v = {{"SET", "v"}, {"EMPTY", ""}};
  EXPECT_EQ(expand("${SET:-d}", v), "v");
  EXPECT_EQ(expand("${EMPTY:-d}", v), "d");
  EXPECT_EQ(expand("${UNSET:-d}", v), "d");
  EXPECT_EQ(expand("${EMPTY-d}", v), "");
  EXPECT_EQ(expand("${UNSET-d}", v), "d");
  EXPECT_EQ(expand("${SET:+alt}", v), "alt");
  EXPECT_EQ(expand("${EMPTY:+alt}", v), "");
  EXPECT_EQ(expand("${EMPTY+alt}", v), "alt");
  EXPECT_EQ(expand("${UNSET:+alt}", v), "");
  EXPECT_EQ(expand("${UNSET:-$SET/x}", v), "v/x");
  EXPECT_EQ(expand("${UNSET:-${ALSO:-deep}}", v), "deep");
}

TEST(DockerfileExpand, RequiredVariableFailsWithMessage) {
  try {
    expand("${NEED:?must be set}");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Dockerfile:1: NEED: must be set");
  }
  EXPECT_EQ(expand("${NEED?}", {{"NEED", ""}}), "");
  EXPECT_THROW(expand("${NEED:?}", {{"NEED", ""}}), Error);
}

TEST(DockerfileExpand, EscapedDollarStaysLiteral) {
  EXPECT_EQ(expand("\\$A \\${A}", {{"A", "x"}}), "$A ${A}");
  EXPECT_EQ(expand("`$A", {{"A", "x"}}, '`'), "$A");
  EXPECT_EQ(expand("c:\\dir", {}, '`'), "c:\\dir");
}

TEST(DockerfileExpand, QuotesRemovedAndSingleQuotesLiteral) {
  EXPECT_EQ(expand("'$A' \"$A\" \"a\\\"b\"", {{"A", "x"}}), "$A x a\"b");
  EXPECT_EQ(expand("\"keep \\n\""), "keep \\n");
}

TEST(DockerfileExpand, SyntaxErrorsReported) {
  EXPECT_THROW(expand("${A"), Error);
  EXPECT_THROW(expand("${}"), Error);
  EXPECT_THROW(expand("${:x}"), Error);
  EXPECT_THROW(expand("${A:-x"), Error);
  EXPECT_THROW(expand("${A/x/y}"), Error);
  EXPECT_THROW(expand("'open"), Error);
  EXPECT_THROW(expand("\"open"), Error);
}

}  // namespace
}  // namespace sandcell::rootfs_builder
