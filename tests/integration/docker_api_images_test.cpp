// The Docker Engine API's image verbs (routes_images.cpp, routes_image_archives.cpp) driven by
// the docker CLI and docker-py: tag, rmi with Docker's conflicts, history, prune, and save/load
// through the store's own archive code; hostile load bodies (not a tar, `..` names, escaping
// symlinks, too large, a decompression bomb) get Docker-style errors and leave nothing behind.
#include <algorithm>

#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

class DockerApiImages : public DockerApi {
 protected:
  // What the store holds on disk: blobs, unpacked layers, temporaries (the index's lock files
  // and the like are not counted).
  std::vector<std::string> store_files() const {
    std::vector<std::string> out;
    for (const char* dir : {"blobs/sha256", "layers", "tmp"}) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(fs::path(store()) / dir, ec))
        if (entry.path().filename().string()[0] != '.') out.push_back(std::string(dir) + "/" + entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  void expect_load_refused(const std::string& file, const std::string& reason) {
    std::vector<std::string> before = store_files();
    auto [status, body] = send_file("POST", "/images/load?quiet=1", file, "application/x-tar");
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(body.value("message", "").find(reason), std::string::npos) << body;
    EXPECT_EQ(store_files(), before);
    EXPECT_EQ(tags(), std::vector<std::string>{"bb:1"});
    EXPECT_EQ(request("GET", "/_ping").first, 200);
  }
};

TEST_F(DockerApiImages, TagListsBothNamesAndRmiUntagsOneThenDeletesTheImageAndItsBlobs) {
  ASSERT_EQ(docker({"tag", "bb:1", "bb:2"}).exit_code, 0);
  ASSERT_EQ(docker({"tag", "bb:1", "localhost:5000/team/bb"}).exit_code, 0);
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1", "bb:2", "localhost:5000/team/bb:latest"}));
  EXPECT_EQ(inspect("bb:2")["Id"], inspect("bb:1")["Id"]);
  CliRun missing = docker({"tag", "nosuch:1", "bb:3"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("No such image: nosuch:1"), std::string::npos) << missing.err;
  EXPECT_EQ(request("POST", "/images/bb:1/tag?repo=BAD%20NAME").first, 400);

  std::vector<std::string> image_files = store_files();
  CliRun untag = docker({"rmi", "bb:2", "localhost:5000/team/bb"});
  EXPECT_EQ(untag.exit_code, 0) << untag.err;
  EXPECT_EQ(untag.out, "Untagged: bb:2\nUntagged: localhost:5000/team/bb:latest\n");
  EXPECT_EQ(store_files(), image_files);  // bb:1 still holds them
  std::string id = inspect("bb:1")["Id"];
  CliRun last = docker({"rmi", "bb:1"});
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(last.out, "Untagged: bb:1\nDeleted: " + id + "\n");
  EXPECT_EQ(tags(), std::vector<std::string>{});
  EXPECT_EQ(store_files(), std::vector<std::string>{});  // nothing ran: reclaimed at once
  CliRun again = docker({"rmi", "bb:1"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("No such image: bb:1"), std::string::npos) << again.err;
}

TEST_F(DockerApiImages, RmiRefusesWhatContainersUseAndWhatManyTagsNameLikeDocker) {
  std::string id = inspect("bb:1")["Id"];
  ASSERT_EQ(docker({"create", "--name", "user", "--network", "none", "bb:1", "true"}).exit_code, 0);
  CliRun used = docker({"rmi", "bb:1"});
  EXPECT_NE(used.exit_code, 0);
  EXPECT_NE(used.err.find("is using its referenced image"), std::string::npos) << used.err;
  ASSERT_EQ(docker({"tag", "bb:1", "bb:2"}).exit_code, 0);
  CliRun by_id = docker({"rmi", id.substr(7, 12)});
  EXPECT_NE(by_id.exit_code, 0);
  EXPECT_NE(by_id.err.find("referenced in multiple repositories"), std::string::npos) << by_id.err;
  CliRun other_tag = docker({"rmi", "bb:1"});  // another name keeps the image: no conflict
  EXPECT_EQ(other_tag.out, "Untagged: bb:1\n") << other_tag.err;
  ASSERT_EQ(docker({"tag", "bb:2", "bb:1"}).exit_code, 0);

  ASSERT_EQ(docker({"run", "-d", "--name", "runner", "--network", "none", "bb:1", "sleep", "60"}).exit_code, 0);
  CliRun running = docker({"rmi", "-f", id.substr(7)});
  EXPECT_NE(running.exit_code, 0);
  EXPECT_NE(running.err.find("(cannot be forced) - image is being used by running container"), std::string::npos)
      << running.err;
  EXPECT_EQ(tags(), (std::vector<std::string>{"bb:1", "bb:2"}));
  ASSERT_EQ(docker({"rm", "-f", "runner", "user"}).exit_code, 0);
  CliRun all = docker({"rmi", "-f", id});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "Untagged: bb:1\nUntagged: bb:2\nDeleted: " + id + "\n");
  EXPECT_EQ(tags(), std::vector<std::string>{});
}

TEST_F(DockerApiImages, HistoryShowsTheBuildStepsNewestFirst) {
  CliRun history = docker({"history", "--no-trunc", "--format", "{{.ID}}|{{.CreatedBy}}", "bb:1"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  std::vector<std::string> steps = lines(history.out);
  ASSERT_EQ(steps.size(), 3u) << history.out;  // CMD, RUN, COPY
  EXPECT_EQ(steps[0].substr(0, steps[0].find('|')), inspect("bb:1")["Id"]);
  EXPECT_NE(steps[0].find("CMD"), std::string::npos) << history.out;
  EXPECT_NE(steps[2].find("COPY"), std::string::npos) << history.out;
  EXPECT_EQ(steps[2].substr(0, steps[2].find('|')), "<missing>");
  EXPECT_EQ(request("GET", "/images/nosuch:1/history").first, 404);
}

TEST_F(DockerApiImages, PruneAllUntagsOnlyImagesNoContainerUses) {
  ASSERT_EQ(docker({"create", "--name", "keeper", "--network", "none", "bb:1", "true"}).exit_code, 0);
  CliRun kept = docker({"image", "prune", "-a", "-f"});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(tags(), std::vector<std::string>{"bb:1"});
  ASSERT_EQ(docker({"rm", "keeper"}).exit_code, 0);
  CliRun pruned = docker({"image", "prune", "-a", "-f"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.out.find("untagged: bb:1"), std::string::npos) << pruned.out;
  EXPECT_EQ(tags(), std::vector<std::string>{});
  EXPECT_EQ(store_files(), std::vector<std::string>{});
  EXPECT_EQ(request("POST", "/images/prune?filters=%7B%22until%22%3A%5B%2210m%22%5D%7D").first, 400);
}

TEST_F(DockerApiImages, SaveThenLoadRoundTripsAndTheLoadedImageRuns) {
  const std::string archive = dir_ / "bb.tar";
  CliRun save = run_program({"/bin/sh", "-c", "/usr/bin/docker save bb:1 > " + archive});
  ASSERT_EQ(save.exit_code, 0) << save.err;
  CliRun listing = run_program({"/bin/tar", "-xOf", archive, "manifest.json"});
  EXPECT_NE(listing.out.find("\"bb:1\""), std::string::npos) << listing.out;  // docker-archive
  std::string id = inspect("bb:1")["Id"];
  ASSERT_EQ(docker({"rmi", "bb:1"}).exit_code, 0);
  CliRun load = docker({"load", "-i", archive});
  EXPECT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(load.out, "Loaded image: bb:1\n");
  EXPECT_EQ(inspect("bb:1")["Id"], id);  // the same config, byte for byte
  CliRun run = docker({"run", "--rm", "--network", "none", "bb:1", "echo", "loaded"});
  EXPECT_EQ(run.out, "loaded\n") << run.err;

  // Through a pipe, and two names in one archive (`/images/get?names=..&names=..`).
  ASSERT_EQ(docker({"tag", "bb:1", "bb:2"}).exit_code, 0);
  CliRun piped = run_program({"/bin/sh", "-c", "/usr/bin/docker save bb:1 bb:2 | /usr/bin/docker load"});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "Loaded image: bb:1\nLoaded image: bb:2\n");
  CliRun missing = docker({"save", "-o", dir_ / "none.tar", "nosuch:1"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("No such image: nosuch:1"), std::string::npos) << missing.err;
  std::vector<std::string> files = store_files();
  EXPECT_TRUE(std::none_of(files.begin(), files.end(), [](const std::string& f) { return f.starts_with("tmp/"); }));
}

TEST_F(DockerApiImages, DockerPySavesAndLoadsImages) {
  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
data = b"".join(client.images.get("bb:1").save())
client.images.remove("bb:1")
print(len(client.images.list()))
print([image.tags for image in client.images.load(data)])
print(client.containers.run("bb:1", ["echo", "ran"], network_disabled=True, remove=True).decode(), end="")
)";
  CliRun r = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n[['bb:1']]\nran\n");
}

// `docker images` filters: reference globs (with and without the tag; `*` stops at '/'),
// label on the image config's Labels, dangling (the store keeps no untagged image), before and
// since; an unknown key and a malformed glob are 400s naming them.
TEST_F(DockerApiImages, ImageListFiltersMatchLikeDocker) {
  for (const char* name : {"python:3.12", "python:2.7", "team/app:1"}) ASSERT_EQ(docker({"tag", "bb:1", name}).exit_code, 0);
  // A later image with labels; created in a later second than bb:1 (the configs' times are
  // whole seconds), so that before and since tell them apart.
  std::string bb_created = inspect("bb:1")["Created"];
  fs::create_directories(dir_ / "labelled");
  std::ofstream(dir_ / "labelled/Dockerfile") << "FROM bb:1\nLABEL kind=labelled sandcell.test=yes\n";
  CliRun built;
  for (int i = 0; i < 50; ++i) {
    built = run_sandcell({"--root", store(), "build", "-q", "--no-cache", "-t", "labelled:1", (dir_ / "labelled").string()});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    if (inspect("labelled:1")["Created"] != bb_created) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(inspect("labelled:1")["Created"], bb_created);
  auto listed = [&](std::vector<std::string> filters) {
    std::vector<std::string> args{"images", "--format", "{{.Repository}}:{{.Tag}}"};
    for (const std::string& f : filters) args.insert(args.end(), {"--filter", f});
    CliRun r = docker(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out = lines(r.out);
    std::sort(out.begin(), out.end());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(listed({"reference=python*"}), V({"python:2.7", "python:3.12"}));
  EXPECT_EQ(listed({"reference=python:3*"}), V({"python:3.12"}));
  EXPECT_EQ(listed({"reference=python"}), V({"python:2.7", "python:3.12"}));  // without the tag
  EXPECT_EQ(listed({"reference=*"}), V({"bb:1", "labelled:1", "python:2.7", "python:3.12"}));
  EXPECT_EQ(listed({"reference=*/*"}), V({"team/app:1"}));
  EXPECT_EQ(listed({"reference=b?:[0-9]", "reference=team/*"}), V({"bb:1", "team/app:1"}));
  EXPECT_EQ(listed({"reference=nomatch*"}), V());
  CliRun positional = docker({"images", "--format", "{{.Repository}}:{{.Tag}}", "team/app"});
  EXPECT_EQ(positional.out, "team/app:1\n") << positional.err;
  EXPECT_EQ(listed({"label=kind=labelled"}), V({"labelled:1"}));
  EXPECT_EQ(listed({"label=sandcell.test"}), V({"labelled:1"}));
  EXPECT_EQ(listed({"label=kind=labelled", "label=sandcell.test=yes"}), V({"labelled:1"}));
  EXPECT_EQ(listed({"label=kind=other"}), V());
  EXPECT_EQ(listed({"label=kind", "reference=python*"}), V());
  EXPECT_EQ(listed({"dangling=true"}), V());
  EXPECT_EQ(listed({"dangling=false"}).size(), 5u);
  EXPECT_EQ(listed({"since=bb:1"}), V({"labelled:1"}));
  EXPECT_EQ(listed({"before=labelled:1", "reference=python*"}), V({"python:2.7", "python:3.12"}));
  EXPECT_EQ(listed({"before=bb:1"}), V());
  auto [status, images] = request("GET", "/images/json?filters=%7B%22label%22%3A%7B%22kind%3Dlabelled%22%3Atrue%7D%7D");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(images.size(), 1u);
  EXPECT_EQ(images[0]["Labels"], nlohmann::json({{"kind", "labelled"}, {"sandcell.test", "yes"}}));

  for (const auto& [filter, named] : std::vector<std::pair<std::string, std::string>>{
           {"colour=red", "colour"}, {"reference=[", "reference"}, {"dangling=maybe", "dangling"},
           {"since=nosuch:1", "nosuch:1"}}) {
    CliRun r = docker({"images", "--filter", filter});
    EXPECT_NE(r.exit_code, 0) << filter;
    EXPECT_NE(r.err.find(named), std::string::npos) << filter << ": " << r.err;
  }
  EXPECT_EQ(request("GET", "/images/json?filters=%7B%22colour%22%3A%5B%22red%22%5D%7D").first, 400);
  EXPECT_EQ(request("GET", "/images/json?filters=%7B%22since%22%3A%5B%22nosuch%3A1%22%5D%7D").first, 404);
  // Thousands of stars: answered (not exponential), matching nothing.
  std::string stars;
  for (int i = 0; i < 2000; ++i) stars += "*b";
  EXPECT_EQ(listed({"reference=" + stars}), V());

  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
def ids(**filters):
    return [image.id for image in client.images.list(filters=filters)]
bb, labelled = client.images.get("bb:1").id, client.images.get("labelled:1").id
print(ids(reference="python:3*") == [bb], ids(label="kind=labelled") == [labelled], ids(dangling=True))
# images.list() inspects each image it lists: all its tags; the list itself has the matching ones.
print(sorted(client.images.list(name="python")[0].tags))
print([sorted(image["RepoTags"]) for image in client.api.images(name="python")])
try:
    client.images.list(filters={"colour": "red"})
except docker.errors.APIError as e:
    print(e.status_code, "colour" in str(e))
)";
  CliRun py = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "True True []\n['bb:1', 'python:2.7', 'python:3.12', 'team/app:1']\n[['python:2.7', 'python:3.12']]\n400 True\n");
}

TEST_F(DockerApiImages, HostileLoadBodiesAreRefusedAndLeaveNothingBehind) {
  std::ofstream(dir_ / "not.tar") << "this is not a tar archive at all, just words\n";
  expect_load_refused(dir_ / "not.tar", "load:");
  expect_load_refused(python_tar("dotdot.tar", "add('../escaped', b'x')\nadd('manifest.json', b'[]')"),
                      "refusing archive entry ../escaped");
  EXPECT_FALSE(fs::exists(fs::path(store()) / "escaped"));
  EXPECT_FALSE(fs::exists(fs::path(store()) / "tmp/escaped"));
  // A symlink out of the archive, then a file through it; and manifest.json as a link to a
  // host file that reads as a manifest: both resolve inside the extraction directory.
  fs::create_directories(dir_ / "outside");
  std::ofstream(dir_ / "host-manifest.json") << R"([{"Config":"c.json","RepoTags":["evil:1"],"Layers":[]}])";
  expect_load_refused(python_tar("links.tar", "add('out', kind=tarfile.SYMTYPE, link='" + (dir_ / "outside").string() +
                                                  "')\nadd('out/pwned', b'x')"),
                      "load: archive: refusing archive entry out/pwned");
  expect_load_refused(python_tar("manifest-link.tar", "add('manifest.json', kind=tarfile.SYMTYPE, link='" +
                                                          (dir_ / "host-manifest.json").string() + "')"),
                      "load: archive member manifest.json: No such file or directory");
  EXPECT_FALSE(fs::exists(dir_ / "outside/pwned"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  auto empty = request("POST", "/images/load");
  EXPECT_EQ(empty.first, 400);
  EXPECT_EQ(docker({"version"}).exit_code, 0);
}

TEST_F(DockerApiImages, LoadBodiesBeyondTheLimitAndDecompressionBombsAreRefused) {
  stop_server();
  start_server({"--docker-api-max-load", "1m"});
  std::vector<std::string> before = store_files();
  std::ofstream(dir_ / "big.tar", std::ios::binary) << std::string(2 << 20, 'x');
  auto sized = send_file("POST", "/images/load", dir_ / "big.tar", "application/x-tar");
  EXPECT_EQ(sized.first, 413);
  EXPECT_NE(sized.second.value("message", "").find("larger than 1048576 bytes"), std::string::npos) << sized.second;
  EXPECT_EQ(send_file("POST", "/images/load", dir_ / "big.tar", "application/x-tar", true).first, 413);
  // 16 MiB of zeros gzip to a few KiB: under the body limit, over what it may unpack to (4x).
  std::string bomb = dir_ / "bomb.tar.gz";
  CliRun made = run_program({"/usr/bin/python3", "-c",
                             "import io, sys, tarfile\nt = tarfile.open(sys.argv[1], 'w:gz')\n"
                             "i = tarfile.TarInfo('zeros'); i.size = 16 << 20\nt.addfile(i, io.BytesIO(bytes(16 << 20)))\n"
                             "t.close()\n", bomb});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_LT(fs::file_size(bomb), 1u << 20);
  auto bombed = send_file("POST", "/images/load", bomb, "application/x-tar");
  EXPECT_EQ(bombed.first, 400) << bombed.second;
  EXPECT_EQ(store_files(), before);
  CliRun still = docker({"run", "--rm", "--network", "none", "bb:1", "echo", "still up"});
  EXPECT_EQ(still.out, "still up\n") << still.err;
}

}  // namespace
}  // namespace sandcell::test
