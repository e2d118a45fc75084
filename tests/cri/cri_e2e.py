#!/usr/bin/python3
"""Kubernetes' CRI end to end on sandcell-oci (issue 29 item 6; docs/kubernetes.md says what it proves).

A private containerd (own socket, root, state and config in a temp directory) with the CRI plugin
enabled runs pods through the runtime handler `sandcell`: containerd's runc shim with BinaryName =
the built sandcell-oci. Its sandbox image is sandcell's own: the static sc-pause built by CMake,
made an image by `sandcell build` and written as an OCI archive by `sandcell save`, then
`ctr -n k8s.io images import`ed, as is the container image (the busybox test rootfs with
sc-probe). The CNI plugins are Debian's (containernetworking-plugins) from a temp bin_dir; the pod
has loopback only. This script is the kubelet: it speaks CRI v1 over gRPC (python3-grpcio) with the
messages of tests/cri/cri_v1.proto, compiled by protoc at build time.

Run as root: cri_e2e.py --sandcell BIN --oci BIN --pause BIN --rootfs DIR --pb-dir DIR
Exit 0 when every step held; 1 with the failed step (and containerd's log) otherwise.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

CNI_PLUGINS = "/usr/lib/cni"
PAUSE_IMAGE = "localhost/sc-cri-pause:1"
APP_IMAGE = "localhost/sc-cri-busybox:1"
MIB = 1024 * 1024


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def step(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise Failure(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def wait_until(what, probe, seconds=30.0):
    """Polls probe() (bounded) until it returns something true; returns it."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.1)


def read(path):
    with open(path) as f:
        return f.read().strip()


def cgroup_mounts():
    """{mount point: 'v1'|'v2'} for every cgroup hierarchy this host mounts."""
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            fstype = fields[fields.index("-") + 1]
            if fstype in ("cgroup", "cgroup2"):
                mounts[fields[4]] = "v2" if fstype == "cgroup2" else "v1"
    return mounts


def proc_cgroups(pid):
    """/proc/PID/cgroup as {controllers: path}: 'memory' → '/kubepods/…', '' → the v2 path."""
    out = {}
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        _, controllers, path = line.split(":", 2)
        out[controllers] = path
    return out


def proc_cgroups_text(text):
    out = {}
    for line in text.splitlines():
        if line.count(":") >= 2:
            _, controllers, path = line.split(":", 2)
            out[controllers] = path
    return out


class Host:
    """What the test makes on the host outside its temp directory, to undo and to check."""

    def __init__(self):
        self.cgroups_made = []  # pod cgroup directories (and parents) the test made, in order
        self.run_containerd_made = not os.path.exists("/run/containerd")
        self.netns_dir_made = not os.path.exists("/var/run/netns")
        self.netns_before = set(os.listdir("/var/run/netns")) if not self.netns_dir_made else set()

    def make_pod_cgroup(self, inner):
        """The kubelet's part: the pod cgroup in every hierarchy, cpusets filled from the parent."""
        for mount, version in cgroup_mounts().items():
            current = mount
            for part in inner.strip("/").split("/"):
                parent, current = current, current + "/" + part
                if os.path.isdir(current):
                    continue
                os.mkdir(current)
                self.cgroups_made.append(current)
                for name in ("cpuset.cpus", "cpuset.mems"):
                    if version == "v1" and os.path.exists(f"{current}/{name}"):
                        with open(f"{current}/{name}", "w") as f:
                            f.write(read(f"{parent}/{name}"))

    def remove_pod_cgroups(self):
        """Removes what make_pod_cgroup made, with whatever a failed run left below it: its
        processes are killed first. Returns the directories that would not go."""
        def tree(top):  # deepest first
            return [root for root, _, _ in os.walk(top, topdown=False)] if os.path.isdir(top) else []

        dirs = [d for top in reversed(self.cgroups_made) for d in tree(top)]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pids = {int(p) for d in dirs if os.path.exists(f"{d}/cgroup.procs")
                    for p in read(f"{d}/cgroup.procs").split()}
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        stuck = []
        for d in dirs:
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError as e:
                stuck.append(f"{d} ({e.strerror})")
        self.cgroups_made = []
        return stuck

    def remove_new_netns(self):
        """Unmounts and removes the network namespaces CRI made during the test and left."""
        left = self.new_netns()
        for name in left:
            subprocess.run(["umount", "-l", f"/var/run/netns/{name}"], capture_output=True)
            try:
                os.unlink(f"/var/run/netns/{name}")
            except OSError:
                pass
        return left

    def new_netns(self):
        if not os.path.isdir("/var/run/netns"):
            return set()
        return {n for n in os.listdir("/var/run/netns") if n.startswith("cni-")} - self.netns_before

    def undo_dirs(self):
        if self.run_containerd_made:
            shutil.rmtree("/run/containerd", ignore_errors=True)
        if self.netns_dir_made:
            try:
                os.rmdir("/var/run/netns")
            except OSError:
                pass


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if path in line.split()[4] or path in line]


def processes_mentioning(text):
    """PIDs whose command line mentions text (our temp dir: containerd, its shims, our pods)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            pass
    return pids


class Containerd:
    def __init__(self, tmp, oci_binary):
        self.tmp = tmp
        self.socket = f"{tmp}/containerd.sock"
        self.log_path = f"{tmp}/containerd.log"
        cni_bin, cni_conf = f"{tmp}/cni-bin", f"{tmp}/cni-conf"
        os.makedirs(cni_bin)
        os.makedirs(cni_conf)
        for plugin in ("loopback", "static"):
            os.symlink(f"{CNI_PLUGINS}/{plugin}", f"{cni_bin}/{plugin}")
        # The pod's network is loopback only. containerd 1.6 adds `lo` itself (the loopback
        # plugin) and wants its default network to report an address on eth0, or RunPodSandbox
        # fails ("failed to find network info for sandbox"): the loopback plugin always answers
        # for `lo` whatever interface it is asked for. So the default network is the loopback
        # plugin again, followed by the static IPAM plugin, which only reports 127.0.0.1/8 as the
        # pod's address and changes nothing in the namespace.
        with open(f"{cni_conf}/10-sc-loopback.conflist", "w") as f:
            json.dump({"cniVersion": "1.0.0", "name": "sc-loopback", "plugins": [
                {"type": "loopback"},
                {"type": "static", "ipam": {"type": "static", "addresses": [{"address": "127.0.0.1/8"}]}},
            ]}, f)
        config = f"""version = 2
root = "{tmp}/root"
state = "{tmp}/state"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{tmp}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # root on this host lacks CAP_SYS_RESOURCE, so the sandbox's oom_score_adj of -998 cannot be
  # set (sandcell-oci says so and fails create); containerd clamps it to its own score instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "sandcell"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sandcell]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sandcell.options]
        BinaryName = "{oci_binary}"
        Root = "{tmp}/sandcell-oci"
        SystemdCgroup = false
"""
        with open(f"{tmp}/config.toml", "w") as f:
            f.write(config)
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(["/usr/bin/containerd", "--config", f"{tmp}/config.toml"],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        wait_until("containerd's socket", lambda: os.path.exists(self.socket) or self.process.poll() is not None)
        check(self.process.poll() is None, "containerd exited at start")

    def ctr(self, *args):
        return run(["/usr/bin/ctr", "-a", self.socket, "-n", "k8s.io", *args])

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def log_tail(self, lines=60):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class Cri:
    """CRI v1 over gRPC: /runtime.v1.<Service>/<Method> with the generated messages."""

    def __init__(self, socket, pb):
        import grpc
        self.pb = pb
        self.channel = grpc.insecure_channel(f"unix://{socket}")

    def call(self, service, method, request, timeout=60):
        response = getattr(self.pb, method + "Response")
        rpc = self.channel.unary_unary(f"/runtime.v1.{service}/{method}",
                                       request_serializer=type(request).SerializeToString,
                                       response_deserializer=response.FromString)
        return rpc(request, timeout=timeout)

    def runtime(self, method, timeout=60, **fields):
        return self.call("RuntimeService", method, getattr(self.pb, method + "Request")(**fields), timeout)

    def image(self, method, **fields):
        return self.call("ImageService", method, getattr(self.pb, method + "Request")(**fields))

    def close(self):
        self.channel.close()


def build_images(args, tmp):
    """The pause and busybox images, by sandcell's image tooling, as one OCI archive."""
    store = f"{tmp}/store"
    pause_ctx, app_ctx = f"{tmp}/pause-ctx", f"{tmp}/app-ctx"
    os.makedirs(pause_ctx)
    shutil.copy2(args.pause, f"{pause_ctx}/pause")
    with open(f"{pause_ctx}/Dockerfile", "w") as f:
        f.write('FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n')
    shutil.copytree(args.rootfs, f"{app_ctx}/rootfs", symlinks=True, ignore=shutil.ignore_patterns(".stamp"))
    with open(f"{app_ctx}/Dockerfile", "w") as f:
        f.write('FROM scratch\nCOPY rootfs/ /\nCMD ["/bin/sh"]\n')
    sandcell = [args.sandcell, "--root", store]
    run([*sandcell, "build", "-q", "-t", PAUSE_IMAGE, pause_ctx])
    run([*sandcell, "build", "-q", "-t", APP_IMAGE, app_ctx])
    archive = f"{tmp}/images.tar"
    run([*sandcell, "save", "--format", "oci-archive", "-o", archive, PAUSE_IMAGE, APP_IMAGE])
    shutil.rmtree(store)
    return archive


def controller_paths(pid):
    """pid's path in every controller hierarchy: the v1 ones and, on a hybrid host, the unified
    one (key ''). name=systemd is left out: it has no controller, and no runtime but systemd's
    driver moves anything there."""
    return {c: p for c, p in proc_cgroups(pid).items() if not c.startswith("name=")}


class Kubelet:
    """The kubelet's side of the test: one method per step, each asserting what it proves."""

    def __init__(self, cri, pb, host, tmp):
        self.cri, self.pb, self.host, self.tmp = cri, pb, host, tmp
        self.pod = None

    def handshake(self):
        version = self.cri.runtime("Version", version="v1")
        step(f"Version: {version.runtime_name} {version.runtime_version}, API {version.runtime_api_version}")
        check(version.runtime_name == "containerd" and version.runtime_api_version == "v1",
              f"Version answered {version}")

        def ready():
            conditions = self.cri.runtime("Status").status.conditions
            return len(conditions) >= 2 and all(c.status for c in conditions)

        wait_until("the runtime's RuntimeReady and NetworkReady conditions", ready)
        for image in (PAUSE_IMAGE, APP_IMAGE):
            spec = self.pb.ImageSpec(image=image)
            wait_until(f"CRI to see {image}", lambda: self.cri.image("ImageStatus", image=spec).image.id)

    def run_pod(self):
        """The pod cgroup as the kubelet's cgroupfs driver makes it, then RunPodSandbox."""
        pb = self.pb
        pod_uid = str(uuid.uuid4())
        self.pod_cgroup = f"/kubepods/burstable/pod{pod_uid}"
        self.host.make_pod_cgroup(self.pod_cgroup)
        with open(f"/sys/fs/cgroup/memory{self.pod_cgroup}/memory.limit_in_bytes", "w") as f:
            f.write(str(256 * MIB))
        self.namespaces = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
        os.makedirs(f"{self.tmp}/logs")
        self.sandbox_config = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name="sc-cri", uid=pod_uid, namespace="default"),
            hostname="sc-cri-pod", log_directory=f"{self.tmp}/logs",
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=self.pod_cgroup,
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=self.namespaces)))
        self.pod = self.cri.runtime("RunPodSandbox", config=self.sandbox_config,
                                    runtime_handler="sandcell").pod_sandbox_id
        step(f"RunPodSandbox: {self.pod[:12]} in {self.pod_cgroup}")
        status = self.cri.runtime("PodSandboxStatus", pod_sandbox_id=self.pod, verbose=True)
        check(status.status.state == pb.SANDBOX_READY, f"pod not ready: {status.status}")
        check(status.status.runtime_handler == "sandcell", f"pod's handler: {status.status.runtime_handler}")
        self.pause_pid = json.loads(status.info["info"])["pid"]
        check(read(f"/proc/{self.pause_pid}/cmdline").split("\0")[0] == "/pause", "the pod's process is not /pause")
        netns = self.host.new_netns()
        check(len(netns) == 1, f"CNI network namespaces made for the pod: {netns}")
        check(os.stat(f"/var/run/netns/{next(iter(netns))}").st_ino == os.stat(f"/proc/{self.pause_pid}/ns/net").st_ino,
              "the pause process is not in the network namespace CNI set up")
        for controller, path in controller_paths(self.pause_pid).items():
            check(path == f"{self.pod_cgroup}/{self.pod}",
                  f"pause is in {controller}:{path}, not {self.pod_cgroup}/{self.pod}")

    def start_container(self, name, command, memory, **resources):
        pb = self.pb
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=APP_IMAGE),
            command=command, log_path=f"{name}.log",
            linux=pb.LinuxContainerConfig(
                resources=pb.LinuxContainerResources(memory_limit_in_bytes=memory, **resources),
                security_context=pb.LinuxContainerSecurityContext(namespace_options=self.namespaces)))
        container = self.cri.runtime("CreateContainer", pod_sandbox_id=self.pod,
                                     sandbox_config=self.sandbox_config, config=config).container_id
        self.cri.runtime("StartContainer", container_id=container)
        return container

    def start_app(self):
        self.app = self.start_container("app", ["/bin/sleep", "600"], 64 * MIB, cpu_shares=512,
                                        cpu_quota=50000, cpu_period=100000)
        status = self.cri.runtime("ContainerStatus", container_id=self.app, verbose=True)
        check(status.status.state == self.pb.CONTAINER_RUNNING, f"app is {status.status.state}, not running")
        self.app_pid = json.loads(status.info["info"])["pid"]
        self.app_cgroup = f"{self.pod_cgroup}/{self.app}"
        self.memory_dir = f"/sys/fs/cgroup/memory{self.app_cgroup}"
        self.cpu_dir = f"/sys/fs/cgroup/cpu{self.app_cgroup}"
        step(f"CreateContainer + StartContainer: {self.app[:12]}, pid {self.app_pid}")

    def check_app_placement(self):
        """In the pod's cgroup in every controller hierarchy; the pod's net/ipc/uts namespaces."""
        paths = controller_paths(self.app_pid)
        check(len(paths) >= 5, f"too few controller hierarchies for the app: {paths}")
        for controller, path in paths.items():
            check(path == self.app_cgroup, f"app is in {controller}:{path}, not {self.app_cgroup}")
        for ns in ("net", "ipc", "uts"):
            check(os.readlink(f"/proc/{self.app_pid}/ns/{ns}") == os.readlink(f"/proc/{self.pause_pid}/ns/{ns}"),
                  f"app does not share the pod's {ns} namespace")
        for ns in ("pid", "mnt"):
            check(os.readlink(f"/proc/{self.app_pid}/ns/{ns}") != os.readlink(f"/proc/{self.pause_pid}/ns/{ns}"),
                  f"app shares the pod's {ns} namespace (PID mode CONTAINER asks for its own)")
        self.check_limits(64 * MIB, "512", "50000")
        step("cgroups and namespaces: app in " + self.app_cgroup + ", net/ipc/uts of the pause process")

    def check_limits(self, memory, shares, quota):
        check(read(f"{self.memory_dir}/memory.limit_in_bytes") == str(memory), "memory limit not written")
        check(read(f"{self.cpu_dir}/cpu.shares") == shares, "cpu shares not written")
        check(read(f"{self.cpu_dir}/cpu.cfs_quota_us") == quota, "cpu quota not written")

    def exec_sync(self):
        # /etc/hostname is the file CRI bind-mounts from the pod's directory (a file mount).
        script = ("echo out; echo err >&2; hostname; cat /etc/hostname; cat /proc/self/cgroup; "
                  "cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '; exit 3")
        result = self.cri.runtime("ExecSync", container_id=self.app, cmd=["/bin/sh", "-c", script], timeout=30)
        out = result.stdout.decode().splitlines()
        check(result.exit_code == 3, f"ExecSync exit code {result.exit_code}: {result.stderr!r}")
        check(out[:3] == ["out", "sc-cri-pod", "sc-cri-pod"], f"ExecSync stdout: {out}")
        check(result.stderr.decode() == "err\n", f"ExecSync stderr: {result.stderr!r}")
        exec_cgroups = proc_cgroups_text("\n".join(out[3:]))
        check(exec_cgroups.get("memory") == self.app_cgroup, f"the exec'd process's cgroups: {exec_cgroups}")
        interfaces = [line for line in out[3:] if line and ":" not in line]
        check(interfaces == ["lo"], f"the pod's network has {interfaces}, not loopback only")
        step("ExecSync: exit 3, stdout/stderr, the pod's hostname (uts and /etc/hostname), the container's cgroup, only lo")

    def container_stats(self):
        stats = self.cri.runtime("ContainerStats", container_id=self.app).stats
        check(stats.attributes.id == self.app, f"ContainerStats for {stats.attributes.id}")
        check(stats.memory.usage_bytes.value > 0 and stats.memory.timestamp > 0, f"memory stats: {stats.memory}")
        check(stats.cpu.usage_core_nano_seconds.value > 0, f"cpu stats: {stats.cpu}")
        step(f"ContainerStats: memory {stats.memory.usage_bytes.value} B, "
             f"cpu {stats.cpu.usage_core_nano_seconds.value} ns")

    def update_resources(self):
        self.cri.runtime("UpdateContainerResources", container_id=self.app, linux=self.pb.LinuxContainerResources(
            memory_limit_in_bytes=96 * MIB, cpu_shares=256, cpu_quota=20000, cpu_period=100000))
        self.check_limits(96 * MIB, "256", "20000")
        step("UpdateContainerResources: memory 96 MiB, shares 256, quota 20000 in the cgroup files")

    def oom(self):
        """A second container asks for more than its 32 MiB: the OOM killer, reported by CRI."""
        hog = self.start_container("hog", ["/bin/sc-probe", "mem", "256"], 32 * MIB)
        self.hog = hog

        def status():
            return self.cri.runtime("ContainerStatus", container_id=hog).status

        wait_until("the hog to exit", lambda: status().state == self.pb.CONTAINER_EXITED)
        # containerd handles the shim's OOM and exit events apart, in either order: the reason
        # may follow the exit by a moment, as it does for the kubelet's next status poll. (The
        # cgroup, memory.oom_control included, went with the task: CRI deletes an exited task.)
        try:
            wait_until("the OOM reason", lambda: status().reason == "OOMKilled", seconds=5)
        except Failure:
            pass  # reported below, with the status
        final = status()
        check(final.reason == "OOMKilled", f"hog exited with reason '{final.reason}' (exit "
              f"{final.exit_code}: {final.message}), not OOMKilled")
        check(final.exit_code == 137, f"hog's exit code {final.exit_code}")
        step(f"OOM: ContainerStatus reason {final.reason}, exit {final.exit_code}")

    def stop_and_remove_containers(self):
        self.cri.runtime("StopContainer", container_id=self.app, timeout=1)
        status = self.cri.runtime("ContainerStatus", container_id=self.app).status
        check(status.state == self.pb.CONTAINER_EXITED, f"app after StopContainer: {status.state}")
        check(not os.path.exists(f"/proc/{self.app_pid}"), "app's process outlived StopContainer")
        for container in (self.app, self.hog):
            self.cri.runtime("RemoveContainer", container_id=container)
        for mount in cgroup_mounts():
            for container in (self.app, self.hog):
                check(not os.path.exists(f"{mount}{self.pod_cgroup}/{container}"),
                      f"{mount}{self.pod_cgroup}/{container} outlived RemoveContainer")
        step(f"StopContainer (exit {status.exit_code}, {status.reason}) + RemoveContainer: cgroups gone")

    def remove_pod(self):
        self.cri.runtime("StopPodSandbox", pod_sandbox_id=self.pod)
        check(not os.path.exists(f"/proc/{self.pause_pid}"), "the pause process outlived StopPodSandbox")
        self.cri.runtime("RemovePodSandbox", pod_sandbox_id=self.pod)
        self.pod = None
        for mount in cgroup_mounts():
            below = [d for d in os.listdir(mount + self.pod_cgroup) if os.path.isdir(f"{mount}{self.pod_cgroup}/{d}")]
            check(not below, f"cgroups left under {mount}{self.pod_cgroup}: {below}")
        check(not self.host.new_netns(), f"network namespaces left: {self.host.new_netns()}")
        state_root = f"{self.tmp}/sandcell-oci/k8s.io"
        left = os.listdir(state_root) if os.path.isdir(state_root) else []
        check(not left, f"sandcell-oci state left: {left}")
        step("StopPodSandbox + RemovePodSandbox: pause gone, no cgroup below the pod's, no netns, no state")

    def take_down(self):
        """After a failure: let containerd take down what it can (network, mounts, tasks)."""
        if self.pod is None:
            return
        for method in ("StopPodSandbox", "RemovePodSandbox"):
            try:
                self.cri.runtime(method, timeout=30, pod_sandbox_id=self.pod)
            except Exception as e:  # noqa: BLE001 — the first failure is the one reported
                print(f"cleanup: {method}: {e}", file=sys.stderr)


def the_test(args, tmp, host, pb):
    archive = build_images(args, tmp)
    step("images built by sandcell: " + ", ".join([PAUSE_IMAGE, APP_IMAGE]))
    containerd = Containerd(tmp, args.oci)
    cri = Cri(containerd.socket, pb)
    kubelet = Kubelet(cri, pb, host, tmp)
    try:
        containerd.ctr("images", "import", archive)
        kubelet.handshake()                    # Version, Status, ImageStatus (no PullImage)
        kubelet.run_pod()                      # RunPodSandbox in a kubepods-style pod cgroup
        kubelet.start_app()                    # CreateContainer + StartContainer
        kubelet.check_app_placement()          # the pod's cgroup and namespaces, its limits
        kubelet.exec_sync()                    # ExecSync
        kubelet.container_stats()              # ContainerStats
        kubelet.update_resources()             # UpdateContainerResources
        kubelet.oom()                          # OOMKilled in ContainerStatus
        kubelet.stop_and_remove_containers()   # StopContainer, RemoveContainer
        kubelet.remove_pod()                   # StopPodSandbox, RemovePodSandbox
    except Exception:
        print("---- containerd log (tail) ----\n" + containerd.log_tail(), file=sys.stderr)
        kubelet.take_down()
        raise
    finally:
        cri.close()
        containerd.stop()
    # Shims exit once their tasks are deleted; give them a moment, then nothing may be left.
    try:
        wait_until("containerd's shims to exit", lambda: not processes_mentioning(tmp), seconds=10)
    except Failure:
        raise Failure(f"processes left: {processes_mentioning(tmp)}")
    check(not mounts_under(tmp), f"mounts left: {mounts_under(tmp)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("sandcell", "oci", "pause", "rootfs", "pb-dir"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("cri_e2e: must run as root (containerd, cgroups)", file=sys.stderr)
        return 1
    sys.path.insert(0, args.pb_dir)
    import cri_v1_pb2 as pb

    started = time.monotonic()
    host = Host()
    tmp = tempfile.mkdtemp(prefix="sc-cri-")
    failure = None
    try:
        the_test(args, tmp, host, pb)
    except Exception as e:  # noqa: BLE001 — every failure is reported, then cleaned up after
        failure = e
    # Clean up whatever happened: processes started under the temp dir, mounts, our cgroups.
    for pid in processes_mentioning(tmp):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for mount in sorted(mounts_under(tmp), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    stuck = host.remove_pod_cgroups()
    if stuck and failure is None:
        failure = Failure(f"pod cgroups would not go: {stuck}")
    netns = host.remove_new_netns()
    if netns and failure is None:
        failure = Failure(f"network namespaces left: {netns}")
    host.undo_dirs()
    shutil.rmtree(tmp, ignore_errors=True)
    if os.path.exists(tmp) and failure is None:
        failure = Failure(f"{tmp} could not be removed")
    if failure is not None:
        print(f"cri_e2e: FAILED: {type(failure).__name__}: {failure}", file=sys.stderr)
        return 1
    print(f"cri_e2e: passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
