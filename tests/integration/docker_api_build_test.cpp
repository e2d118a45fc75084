// The Engine API's image transfer verbs (routes_build.cpp, routes_image_transfer.cpp) driven by
// the docker CLI and docker-py: `docker build` (the classic builder, DOCKER_BUILDKIT=0) with RUN,
// COPY, ARG, labels and a multi-stage --target, docker-py's images.build(fileobj=...), and push,
// rmi, pull, run against a local docker-registry. Hostile input (a context with `..` entries and
// symlinks out, a context over the limit, bad buildargs, garbage X-Registry-Auth, names that do
// not exist) gets Docker-style errors, the server stays up and nothing is left in the store.
#include <algorithm>

#include "docker_api_fixture.hpp"
#include "registry_servers.hpp"

namespace sandcell::test {
namespace {

class DockerApiBuild : public DockerApi {
 protected:
  void SetUp() override {
    fs::create_directories(fs::temp_directory_path() / ("sandcell-docker-cfg-" + std::to_string(getpid())));
    docker_config_ = fs::temp_directory_path() / ("sandcell-docker-cfg-" + std::to_string(getpid()));
    std::ofstream(docker_config_ / "config.json") << "{}";
    setenv("DOCKER_CONFIG", docker_config_.c_str(), 1);  // never the host's docker logins
    setenv("DOCKER_BUILDKIT", "0", 1);
    DockerApi::SetUp();
  }

  void TearDown() override {
    DockerApi::TearDown();
    unsetenv("DOCKER_CONFIG");
    unsetenv("DOCKER_BUILDKIT");
    fs::remove_all(docker_config_);
  }

  // Build jobs' directories and spooled bodies left in the store's tmp: there must be none.
  std::vector<std::string> store_tmp() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(store()) / "tmp", ec))
      if (entry.path().filename().string()[0] != '.') out.push_back(entry.path().filename());
    return out;
  }

  // curl with extra headers: the status code and the whole body (a stream of JSON lines).
  std::pair<int, std::string> post(const std::string& path, const std::vector<std::string>& headers,
                                   const std::string& body_file = "/dev/null") const {
    std::vector<std::string> args{"/usr/bin/curl", "-s", "--unix-socket", socket_path(), "-X", "POST",
                                  "--data-binary", "@" + body_file, "-H", "Content-Type: application/x-tar",
                                  "-w", "\n%{http_code}"};
    for (const std::string& h : headers) args.insert(args.end(), {"-H", h});
    args.push_back("http://docker" + path);
    CliRun r = run_program(args);
    size_t newline = r.out.rfind('\n');
    if (newline == std::string::npos) return {0, r.out};
    return {std::atoi(r.out.c_str() + newline + 1), r.out.substr(0, newline)};
  }

  static std::string message_of(const std::string& body) {
    nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    return j.is_object() ? j.value("message", "") : "";
  }

  void expect_server_up_and_store_clean() {
    EXPECT_EQ(request("GET", "/_ping").first, 200);
    EXPECT_EQ(store_tmp(), std::vector<std::string>{});
    CliRun still = docker({"run", "--rm", "--network", "none", "bb:1", "echo", "still up"});
    EXPECT_EQ(still.out, "still up\n") << still.err;
  }

  fs::path docker_config_;
};

TEST_F(DockerApiBuild, DockerCliBuildsWithRunCopyArgLabelsAndAMultiStageTarget) {
  fs::create_directories(dir_ / "app");
  std::ofstream(dir_ / "app/greeting.txt") << "greeting file\n";
  std::ofstream(dir_ / "app/Dockerfile")
      << "FROM bb:1 AS base\nARG GREETING=hello\nCOPY greeting.txt /greeting.txt\n"
         "RUN echo \"$GREETING from run\" > /run.txt\n"
         "FROM bb:1 AS final\nCOPY --from=base /greeting.txt /run.txt /\nCMD [\"cat\", \"/greeting.txt\", \"/run.txt\"]\n"
         "FROM bb:1 AS broken\nRUN exit 3\n";
  CliRun built = docker({"build", "-t", "built:1", "-t", "built:alias", "--build-arg", "GREETING=hi", "--target", "final",
                         "--label", "team=qa", (dir_ / "app").string()});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_NE(built.out.find("Step 1/"), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("Successfully built "), std::string::npos) << built.out;
  EXPECT_NE(built.out.find("Successfully tagged built:alias"), std::string::npos) << built.out;
  CliRun ran = docker({"run", "--rm", "--network", "none", "built:1"});
  EXPECT_EQ(ran.out, "greeting file\nhi from run\n") << ran.err;
  nlohmann::json image = inspect("built:alias");
  EXPECT_EQ(image["Config"]["Labels"].value("team", ""), "qa") << image;
  EXPECT_EQ(image["Id"], inspect("built:1")["Id"]);
  // A step that fails: the CLI prints the builder's error and exits non-zero; nothing tagged.
  CliRun failed = docker({"build", "-t", "broken:1", "--target", "broken", (dir_ / "app").string()});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_NE((failed.out + failed.err).find("exit"), std::string::npos) << failed.out << failed.err;
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1", "built:1", "built:alias"}));
  expect_server_up_and_store_clean();
}

TEST_F(DockerApiBuild, DockerPyBuildsFromAFileObject) {
  std::string script = R"(
import docker, io, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
dockerfile = io.BytesIO(b'FROM bb:1\nARG WHO=nobody\nRUN echo "built by $WHO" > /by.txt\nCMD ["cat", "/by.txt"]\n')
image, logs = client.images.build(fileobj=dockerfile, tag="py:1", buildargs={"WHO": "docker-py"})
print(image.tags)
print(any("Step" in chunk.get("stream", "") for chunk in logs))
print(client.containers.run("py:1", network_disabled=True, remove=True).decode(), end="")
try:
    client.images.build(fileobj=io.BytesIO(b"FROM bb:1\nRUN exit 7\n"), tag="py:bad")
except docker.errors.BuildError as e:
    print("BuildError")
)";
  CliRun r = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "['py:1']\nTrue\nbuilt by docker-py\nBuildError\n");
  expect_server_up_and_store_clean();
}

TEST_F(DockerApiBuild, PushRmiPullAndRunAgainstALocalRegistry) {
  LocalRegistry registry(dir_ / "registry", LocalRegistry::Auth::None);
  const std::string name = registry.address() + "/team/bb:pushed";
  ASSERT_EQ(docker({"tag", "bb:1", name}).exit_code, 0);
  CliRun pushed = docker({"push", name});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err << registry.log();
  EXPECT_NE(pushed.out.find("The push refers to repository [" + registry.address() + "/team/bb]"), std::string::npos)
      << pushed.out;
  EXPECT_NE(pushed.out.find("pushed: digest: sha256:"), std::string::npos) << pushed.out;
  // Docker's per-layer lines, by the layers' short DiffIDs: every layer Preparing then Pushed.
  auto short_diff_ids = [&](const std::string& image) {
    std::vector<std::string> out;
    for (const std::string& diff_id :
         lines(docker({"image", "inspect", "--format", "{{range .RootFS.Layers}}{{println .}}{{end}}", image}).out))
      out.push_back(diff_id.substr(7, 12));
    return out;
  };
  std::vector<std::string> bb_layers = short_diff_ids(name);
  ASSERT_GE(bb_layers.size(), 2u) << "bb:1 has a COPY and a RUN layer";
  for (const std::string& layer : bb_layers) {
    size_t preparing = pushed.out.find(layer + ": Preparing\n"), done = pushed.out.find(layer + ": Pushed\n");
    EXPECT_NE(preparing, std::string::npos) << layer << "\n" << pushed.out;
    EXPECT_NE(done, std::string::npos) << layer << "\n" << pushed.out;
    EXPECT_LT(preparing, done) << pushed.out;
  }
  // One more layer on top, pushed to the same repository: the registry has the others.
  fs::create_directories(dir_ / "more");
  std::ofstream(dir_ / "more/Dockerfile") << "FROM bb:1\nRUN echo more > /more.txt\n";
  const std::string more = registry.address() + "/team/bb:more";
  ASSERT_EQ(run_sandcell({"--root", store(), "build", "-q", "-t", more, (dir_ / "more").string()}).exit_code, 0);
  std::vector<std::string> more_layers = short_diff_ids(more);
  ASSERT_EQ(more_layers.size(), bb_layers.size() + 1);
  CliRun pushed_more = docker({"push", more});
  ASSERT_EQ(pushed_more.exit_code, 0) << pushed_more.out << pushed_more.err << registry.log();
  for (const std::string& layer : bb_layers)
    EXPECT_NE(pushed_more.out.find(layer + ": Layer already exists\n"), std::string::npos) << layer << "\n" << pushed_more.out;
  EXPECT_NE(pushed_more.out.find(more_layers.back() + ": Pushed\n"), std::string::npos) << pushed_more.out;
  // Preparing lines come top layer first, as Docker's.
  EXPECT_LT(pushed_more.out.find(more_layers.back() + ": Preparing"), pushed_more.out.find(bb_layers[0] + ": Preparing"))
      << pushed_more.out;
  // docker-py's stream: the new layer's statuses in order, Pushing carrying its bytes.
  std::string py_push = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
seen = []
for line in client.api.push(sys.argv[2], tag="py", stream=True, decode=True):
    if line.get("id") == sys.argv[3] and (not seen or seen[-1] != line["status"]):
        seen.append(line["status"])
print(seen)
)";
  fs::create_directories(dir_ / "py");
  std::ofstream(dir_ / "py/Dockerfile") << "FROM bb:1\nRUN echo docker-py > /py.txt\n";
  const std::string py_name = registry.address() + "/team/bb:py";
  ASSERT_EQ(run_sandcell({"--root", store(), "build", "-q", "-t", py_name, (dir_ / "py").string()}).exit_code, 0);
  CliRun py_pushed = run_program({"/usr/bin/python3", "-c", py_push, "unix://" + socket_path(),
                                  registry.address() + "/team/bb", short_diff_ids(py_name).back()});
  EXPECT_EQ(py_pushed.exit_code, 0) << py_pushed.err;
  EXPECT_EQ(py_pushed.out, "['Preparing', 'Pushing', 'Pushed']\n") << py_pushed.err;
  ASSERT_EQ(docker({"rmi", more, py_name}).exit_code, 0);
  std::string id = inspect("bb:1")["Id"];
  // Both tags gone, the store holds none of the image's blobs: the pull downloads them all.
  ASSERT_EQ(docker({"rmi", name, "bb:1"}).exit_code, 0);
  EXPECT_EQ(tags(), std::vector<std::string>{});
  CliRun pulled = docker({"pull", name});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  EXPECT_NE(pulled.out.find("Pulling from team/bb"), std::string::npos) << pulled.out;
  EXPECT_NE(pulled.out.find("Digest: sha256:"), std::string::npos) << pulled.out;
  EXPECT_NE(pulled.out.find("Status: Downloaded newer image for " + name), std::string::npos) << pulled.out;
  CliRun image = docker({"image", "inspect", "--format", "{{.Id}}", name});
  EXPECT_EQ(image.out, id + "\n") << image.err;
  // Plain `inspect` asks for a container of that name first: a 404 sends it on to the image.
  CliRun either = docker({"inspect", "--format", "{{.Id}}", name});
  EXPECT_EQ(either.out, id + "\n") << either.err;
  CliRun again = docker({"pull", name});
  EXPECT_NE(again.out.find("Status: Image is up to date for " + name), std::string::npos) << again.out;
  CliRun ran = docker({"run", "--rm", "--network", "none", name, "echo", "pulled back"});
  EXPECT_EQ(ran.out, "pulled back\n") << ran.err;
  // docker-py's pull through the same endpoint, with credentials in X-Registry-Auth.
  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
image = client.images.pull(sys.argv[2], tag="pushed", auth_config={"username": "u", "password": "p"})
print(image.id == sys.argv[3])
)";
  CliRun py = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path(),
                           registry.address() + "/team/bb", id});
  EXPECT_EQ(py.out, "True\n") << py.err;
  ASSERT_EQ(docker({"tag", name, "bb:1"}).exit_code, 0);  // for the checks below and TearDown
  expect_server_up_and_store_clean();
}

// `docker push --all-tags` (no `tag`: every tag of the repository), then a pull that downloads
// every layer: Docker's per-layer lines keyed by the layer's short digest (what the registry's
// manifest lists), as the docker CLI and docker-py read them, and an `image pull` event.
TEST_F(DockerApiBuild, PushAllTagsAndPullReportsEachLayerAndAnImagePullEvent) {
  LocalRegistry registry(dir_ / "registry", LocalRegistry::Auth::None);
  const std::string repo = registry.address() + "/team/multi";
  ASSERT_EQ(docker({"tag", "bb:1", repo + ":a"}).exit_code, 0);
  ASSERT_EQ(docker({"tag", "bb:1", repo + ":b"}).exit_code, 0);
  CliRun pushed = docker({"push", "--all-tags", repo});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err << registry.log();
  EXPECT_NE(pushed.out.find("a: digest: sha256:"), std::string::npos) << pushed.out;
  EXPECT_NE(pushed.out.find("b: digest: sha256:"), std::string::npos) << pushed.out;
  auto none = post("/images/" + registry.address() + "/team/absent/push", {});
  EXPECT_EQ(none.first, 404) << none.second;
  // The layers' short digests, from the registry's manifest of tag b.
  std::string script = R"(
import json, sys, urllib.request
req = urllib.request.Request("http://" + sys.argv[1] + "/v2/team/multi/manifests/b", headers={"Accept":
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"})
for layer in json.load(urllib.request.urlopen(req))["layers"]:
    print(layer["digest"].split(":")[1][:12])
)";
  CliRun manifest = run_program({"/usr/bin/python3", "-c", script, registry.address()});
  std::vector<std::string> layers = lines(manifest.out);
  ASSERT_FALSE(layers.empty()) << manifest.err;
  // Nothing of the image left in the store: the pull fetches every layer.
  ASSERT_EQ(docker({"rmi", repo + ":a", repo + ":b", "bb:1"}).exit_code, 0);
  const std::string since = std::to_string(time(nullptr));
  CliRun pulled = docker({"pull", repo + ":b"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  EXPECT_NE(pulled.out.find("b: Pulling from team/multi"), std::string::npos) << pulled.out;
  for (const std::string& layer : layers) {
    EXPECT_NE(pulled.out.find(layer + ": Pulling fs layer"), std::string::npos) << layer << "\n" << pulled.out;
    EXPECT_NE(pulled.out.find(layer + ": Pull complete"), std::string::npos) << layer << "\n" << pulled.out;
  }
  EXPECT_NE(pulled.out.find("Digest: sha256:"), std::string::npos) << pulled.out;
  EXPECT_NE(pulled.out.find("Status: Downloaded newer image for " + repo + ":b"), std::string::npos) << pulled.out;
  CliRun events = docker({"events", "--since", since, "--until", std::to_string(time(nullptr) + 1), "--filter",
                          "type=image", "--filter", "event=pull", "--format", "{{.Actor.ID}} {{.Actor.Attributes.name}}"});
  EXPECT_EQ(events.out, repo + ":b " + repo + "\n") << events.err;
  // Pulled again, every layer there: no layer lines, as Docker's.
  CliRun again = docker({"pull", repo + ":b"});
  EXPECT_EQ(again.out.find("Pull complete"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("Status: Image is up to date for " + repo + ":b"), std::string::npos) << again.out;
  // docker-py: the per-layer sequence by id from the decoded stream, and a push without tag.
  ASSERT_EQ(docker({"rmi", repo + ":b"}).exit_code, 0);
  std::string py = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
seen = {}
for line in client.api.pull(sys.argv[2], tag="a", stream=True, decode=True):
    if "id" in line and line.get("status") != "Downloading":
        seen.setdefault(line["id"], []).append(line["status"])
for layer in sys.argv[3:]:
    print(layer, seen.get(layer))
client.images.get(sys.argv[2] + ":a").tag(sys.argv[2], "c")
out = "".join(str(l) for l in client.images.push(sys.argv[2], stream=True, decode=True))
print("a: digest" in out, "c: digest" in out)
)";
  std::vector<std::string> py_args{"/usr/bin/python3", "-c", py, "unix://" + socket_path(), repo};
  py_args.insert(py_args.end(), layers.begin(), layers.end());
  CliRun docker_py = run_program(py_args);
  std::string expected;
  for (const std::string& layer : layers)
    expected += layer + " ['Pulling fs layer', 'Download complete', 'Pull complete']\n";
  EXPECT_EQ(docker_py.out, expected + "True True\n") << docker_py.err;
  ASSERT_EQ(docker({"tag", repo + ":a", "bb:1"}).exit_code, 0);
  ASSERT_EQ(docker({"rmi", repo + ":a", repo + ":c"}).exit_code, 0);
  expect_server_up_and_store_clean();
}

TEST_F(DockerApiBuild, PullsAndPushesThatCannotWorkGetCleanDockerErrors) {
  LocalRegistry registry(dir_ / "registry", LocalRegistry::Auth::None);
  // A name the registry does not have: 404 before any progress line, and the CLI says so.
  auto missing = post("/images/create?fromImage=" + registry.address() + "/nope&tag=1", {});
  EXPECT_EQ(missing.first, 404) << missing.second;
  EXPECT_NE(message_of(missing.second).find("nope"), std::string::npos) << missing.second;
  CliRun cli = docker({"pull", registry.address() + "/nope:1"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("Error response from daemon"), std::string::npos) << cli.err;
  // X-Registry-Auth that is not base64url JSON, or asks for what is not supported: 400.
  for (const std::string& header : {std::string("X-Registry-Auth: %%%not-base64!!"),
                                    "X-Registry-Auth: " + std::string("WyJhcnJheSJd"),  // ["array"]
                                    std::string("X-Registry-Auth: eyJpZGVudGl0eXRva2VuIjoieCJ9")}) {  // identitytoken
    auto garbage = post("/images/create?fromImage=" + registry.address() + "/team/bb&tag=1", {header});
    EXPECT_EQ(garbage.first, 400) << header << garbage.second;
    EXPECT_NE(message_of(garbage.second).find("X-Registry-Auth"), std::string::npos) << garbage.second;
    auto push = post("/images/bb/push?tag=1", {header});
    EXPECT_EQ(push.first, 400) << push.second;
  }
  auto bad_reference = post("/images/create?fromImage=UPPER%2F%2Fcase&tag=1", {});
  EXPECT_EQ(bad_reference.first, 400) << bad_reference.second;
  auto unknown_local = post("/images/" + registry.address() + "/absent/push?tag=1", {});
  EXPECT_EQ(unknown_local.first, 404) << unknown_local.second;
  auto import = post("/images/create?fromSrc=-&repo=x", {});
  EXPECT_EQ(import.first, 501) << import.second;
  EXPECT_NE(message_of(import.second).find("fromSrc"), std::string::npos);
  // A registry that is not there: an error, not a hang or a crash.
  auto unreachable = post("/images/create?fromImage=127.0.0.1:1/x&tag=1", {});
  EXPECT_GE(unreachable.first, 400) << unreachable.second;
  EXPECT_EQ(tags(), std::vector<std::string>{"bb:1"});
  expect_server_up_and_store_clean();
}

TEST_F(DockerApiBuild, HostileContextsAndParametersAreRefusedAndLeaveNothingBehind) {
  fs::create_directories(dir_ / "outside");
  std::ofstream(dir_ / "secret.txt") << "host secret\n";
  // `..` and a symlink out followed by a file through it: refused before anything runs.
  std::string dotdot = python_tar("dotdot.tar", "add('Dockerfile', b'FROM bb:1\\n')\nadd('../escaped', b'x')");
  auto refused = post("/build?t=evil:1", {}, dotdot);
  EXPECT_EQ(refused.first, 400) << refused.second;
  EXPECT_NE(message_of(refused.second).find("../escaped"), std::string::npos) << refused.second;
  EXPECT_FALSE(fs::exists(fs::path(store()) / "tmp/escaped"));
  std::string through = python_tar("through.tar", "add('Dockerfile', b'FROM bb:1\\n')\nadd('out', kind=tarfile.SYMTYPE, link='" +
                                                      (dir_ / "outside").string() + "')\nadd('out/pwned', b'x')");
  auto linked = post("/build?t=evil:1", {}, through);
  EXPECT_EQ(linked.first, 400) << linked.second;
  EXPECT_NE(message_of(linked.second).find("out/pwned"), std::string::npos) << linked.second;
  EXPECT_FALSE(fs::exists(dir_ / "outside/pwned"));
  // Symlinks to host files are kept as links and resolved inside the context: COPY copies the
  // link, a Dockerfile that is one (or a dockerfile= with ..) names nothing in the context.
  std::string copy_link = python_tar("copy-link.tar", "add('Dockerfile', b'FROM bb:1\\nCOPY stolen /stolen\\n')\n"
                                                      "add('stolen', kind=tarfile.SYMTYPE, link='" + (dir_ / "secret.txt").string() + "')");
  auto copied = post("/build?t=linked:1", {}, copy_link);
  EXPECT_EQ(copied.first, 200) << copied.second;
  CliRun cat = docker({"run", "--rm", "--network", "none", "linked:1", "cat", "/stolen"});
  EXPECT_EQ(cat.out.find("host secret"), std::string::npos) << cat.out;
  std::string dockerfile_link = python_tar("dockerfile-link.tar", "add('Dockerfile', kind=tarfile.SYMTYPE, link='" +
                                                                      (dir_ / "secret.txt").string() + "')");
  auto no_dockerfile = post("/build?t=evil:1", {}, dockerfile_link);
  EXPECT_EQ(no_dockerfile.first, 400) << no_dockerfile.second;
  EXPECT_EQ(no_dockerfile.second.find("host secret"), std::string::npos) << no_dockerfile.second;
  auto dotdot_name = post("/build?t=evil:1&dockerfile=..%2F..%2F..%2F" + (dir_ / "secret.txt").filename().string(), {}, copy_link);
  EXPECT_EQ(dotdot_name.first, 400) << dotdot_name.second;
  EXPECT_EQ(dotdot_name.second.find("host secret"), std::string::npos) << dotdot_name.second;
  // Parameters: malformed buildargs and labels, a host network, another platform, BuildKit.
  std::string plain = python_tar("plain.tar", "add('Dockerfile', b'FROM bb:1\\nRUN true\\n')");
  for (std::string query : {"buildargs=%7Bbad", "buildargs=%5B1%5D", "labels=%7B%22a%22%3A1%7D", "networkmode=host",
                                   "platform=linux%2Fs390x", "version=2", "t=Bad%20Name", "cpuquota=5000"}) {
    auto bad = post("/build?" + query, {}, plain);
    EXPECT_EQ(bad.first, 400) << query << ": " << bad.second;
    EXPECT_FALSE(message_of(bad.second).empty()) << query;
  }
  auto empty = post("/build?t=x:1", {});
  EXPECT_EQ(empty.first, 400) << empty.second;
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1", "linked:1"}));
  expect_server_up_and_store_clean();
  // A context over the limit (--docker-api-max-load bounds it as it bounds docker load): 413.
  stop_server();
  start_server({"--docker-api-max-load", "1m"});
  std::ofstream(dir_ / "big.tar", std::ios::binary) << std::string(2 << 20, 'x');
  auto big = post("/build?t=big:1", {}, dir_ / "big.tar");
  EXPECT_EQ(big.first, 413) << big.second;
  expect_server_up_and_store_clean();
}

// An htpasswd registry: the CLI's credentials (its config.json, sent as X-Registry-Auth) are
// the ones used; the server never lends a client the logins it can read itself (the same
// config.json is the server's DOCKER_CONFIG here, so a request without the header must fail).
TEST_F(DockerApiBuild, RegistryCredentialsComeFromTheClientOnly) {
  LocalRegistry registry(dir_ / "registry", LocalRegistry::Auth::Htpasswd);
  const std::string name = registry.address() + "/private/bb:1";
  ASSERT_EQ(docker({"tag", "bb:1", name}).exit_code, 0);
  CliRun anonymous = docker({"push", name});
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_NE((anonymous.out + anonymous.err).find("401"), std::string::npos) << anonymous.out << anonymous.err;
  std::ofstream(docker_config_ / "config.json")  // tester:s3cret-pass
      << nlohmann::json({{"auths", {{registry.address(), {{"auth", "dGVzdGVyOnMzY3JldC1wYXNz"}}}}}}).dump();
  CliRun pushed = docker({"push", name});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err << registry.log();
  auto without_header = post("/images/create?fromImage=" + registry.address() + "/private/bb&tag=1", {});
  EXPECT_EQ(without_header.first, 400) << without_header.second;
  EXPECT_NE(message_of(without_header.second).find("401"), std::string::npos) << without_header.second;
  auto wrong = post("/images/create?fromImage=" + registry.address() + "/private/bb&tag=1",
                    {"X-Registry-Auth: " + std::string("eyJ1c2VybmFtZSI6InRlc3RlciIsInBhc3N3b3JkIjoid3JvbmcifQ==")});
  EXPECT_EQ(wrong.first, 400) << wrong.second;  // {"username":"tester","password":"wrong"}
  ASSERT_EQ(docker({"rmi", name}).exit_code, 0);
  CliRun pulled = docker({"pull", name});
  EXPECT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  EXPECT_EQ(tags(), (std::vector<std::string>{name, "bb:1"}));  // sorted: digits first
  // docker build FROM the private image the store lacks: the CLI's logins (X-Registry-Config)
  // pull it; without them the registry's 401 is the build's error.
  ASSERT_EQ(docker({"rmi", name}).exit_code, 0);
  fs::create_directories(dir_ / "private-ctx");
  std::ofstream(dir_ / "private-ctx/Dockerfile") << "FROM " << name << "\nCMD [\"echo\", \"from private\"]\n";
  CliRun built = docker({"build", "-t", "fromprivate:1", (dir_ / "private-ctx").string()});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err << registry.log();
  EXPECT_EQ(docker({"run", "--rm", "--network", "none", "fromprivate:1"}).out, "from private\n");
  ASSERT_EQ(docker({"rmi", name, "fromprivate:1"}).exit_code, 0);
  std::ofstream(docker_config_ / "config.json") << "{}";
  CliRun refused = docker({"build", "-t", "fromprivate:2", (dir_ / "private-ctx").string()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE((refused.out + refused.err).find("401"), std::string::npos) << refused.out << refused.err;
  // A malformed X-Registry-Config, or one with an identity token: 400 naming the header.
  std::string plain = python_tar("plain-from.tar", "add('Dockerfile', b'FROM bb:1\\n')");
  for (const std::string& header : {std::string("X-Registry-Config: %%%not-base64!!"),
                                    std::string("X-Registry-Config: WyJhcnJheSJd"),  // ["array"]
                                    // {"127.0.0.1:5000": {"identitytoken": "x"}}
                                    std::string("X-Registry-Config: eyIxMjcuMC4wLjE6NTAwMCI6IHsiaWRlbnRpdHl0b2tlbiI6ICJ4In19")}) {
    auto garbage = post("/build?t=x:1", {header}, plain);
    EXPECT_EQ(garbage.first, 400) << header << garbage.second;
    EXPECT_NE(message_of(garbage.second).find("X-Registry-Config"), std::string::npos) << garbage.second;
  }
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1"}));
  expect_server_up_and_store_clean();
}

// A client that hangs up does not cancel the build (as documented): it runs to its end, and
// its job directory and process go; the server keeps serving meanwhile.
TEST_F(DockerApiBuild, AClientThatHangsUpMidBuildLeavesNothingBehind) {
  std::string slow = python_tar("slow.tar", "add('Dockerfile', b'FROM bb:1\\nRUN sleep 2 && echo done > /done\\n')");
  CliRun cut = run_program({"/usr/bin/curl", "-s", "--max-time", "1", "--unix-socket", socket_path(), "-X", "POST",
                            "--data-binary", "@" + slow, "http://docker/build?t=slow:1"});
  EXPECT_EQ(cut.exit_code, 28) << cut.out << cut.err;  // curl's "operation timed out"
  EXPECT_EQ(request("GET", "/_ping").first, 200);
  const std::string jobs = serve_binary() + " --root " + store() + " docker-build-job";
  for (int i = 0; i < 600 && (!processes_matching(jobs).empty() || !store_tmp().empty()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(processes_matching(jobs).empty());
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1", "slow:1"}));
  CliRun ran = docker({"run", "--rm", "--network", "none", "slow:1", "cat", "/done"});
  EXPECT_EQ(ran.out, "done\n") << ran.err;
  expect_server_up_and_store_clean();
}

}  // namespace
}  // namespace sandcell::test
