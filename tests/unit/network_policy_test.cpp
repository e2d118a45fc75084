// Network policy mechanics without root: host-name normalisation and the allowlist, address
// classification, the hosts-file resolver, resolv.conf handling, and the proxy itself on loopback
// with a loopback upstream (cpp-httplib). Every name resolves through a hosts file the test
// writes, so nothing here touches real DNS or leaves the machine.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/network/nft_rules.hpp"
#include "sandcell/network/proxy.hpp"
#include "sandcell/network/resolv.hpp"
#include "sandcell/network/resolver.hpp"
#include "sandcell/network/veth.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sc-net-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  fs::path path_of_missing() const { return path_ / "missing"; }

 private:
  fs::path path_;
};

std::string rejection(std::string_view raw) {
  try {
    normalise_host(raw);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool blocked(const char* text, const AddressPolicy& policy = AddressPolicy()) {
  return policy.is_blocked(*IpAddress::parse(text));
}

// --- normalisation ---------------------------------------------------------------------------

TEST(HostName, Normalise_LowercasesAndStripsOneTrailingDot) {
  EXPECT_EQ(normalise_host("Allowed.TEST.").name, "allowed.test");
  EXPECT_FALSE(normalise_host("Allowed.TEST.").ip_literal);
  EXPECT_NE(rejection("allowed.test.."), "");
}

TEST(HostName, Normalise_ConvertsUnicodeToALabel) {
  EXPECT_EQ(normalise_host("bücher.example").name, "xn--bcher-kva.example");
  EXPECT_EQ(normalise_host("BÜCHER.example").name, "xn--bcher-kva.example");
}

// Found by fuzz_host_name: IDNA maps before it encodes, so what comes out must be checked as an
// IP literal again, or "０" and "１２７．０．０．１" would pass as names and skip the address
// rules.
TEST(HostName, Normalise_IdnaResultThatIsAnAddressIsAnIpLiteral) {
  const NormalisedHost ignorable = normalise_host(
      "\xcd\x8f"
      "0");  // U+034F, then '0'
  EXPECT_EQ(ignorable.name, "0.0.0.0");
  EXPECT_TRUE(ignorable.ip_literal);
  const NormalisedHost full_width = normalise_host("１２７．０．０．１");
  EXPECT_EQ(full_width.name, "127.0.0.1");
  EXPECT_TRUE(full_width.ip_literal);
  EXPECT_EQ(normalise_host("ｅｘａｍｐｌｅ．test。").name, "example.test");
  for (const char* name : {"\xcd\x8f"
                           "0",
                           "１２７．０．０．１", "ｅｘａｍｐｌｅ．test。"}) {
    const NormalisedHost once = normalise_host(name);
    const NormalisedHost twice = normalise_host(once.name);
    EXPECT_EQ(twice.name, once.name) << name;
    EXPECT_EQ(twice.ip_literal, once.ip_literal) << name;
  }
}

TEST(HostName, Normalise_RejectsNulUserinfoAndSeparators) {
  EXPECT_NE(rejection(std::string("evil.test\0.allowed.test", 23)).find("NUL"), std::string::npos);
  EXPECT_NE(rejection("allowed.test@evil.test").find("userinfo"), std::string::npos);
  for (const char* bad : {"", ".", "a..b", ".a.b", "a b", "a\tb", "a/b", "a\\b", "a%2eb", "a:80",
                          "a\r\nb", "*.a.b"}) {
    EXPECT_NE(rejection(bad), "") << bad;
  }
}

TEST(HostName, Normalise_LegacyIpv4FormsAreIpLiterals) {
  for (const char* form : {"2130706433", "0x7f000001", "127.1", "0177.0.0.1", "127.0.0.1."}) {
    const auto host = normalise_host(form);
    EXPECT_TRUE(host.ip_literal) << form;
    EXPECT_EQ(host.name, "127.0.0.1") << form;
    EXPECT_TRUE(AddressPolicy().is_blocked(*IpAddress::parse(host.name))) << form;
  }
  EXPECT_NE(rejection("1.2.3.999"), "");  // numeric last label that is no address
  EXPECT_NE(rejection("foo.0x10"), "");
}

TEST(HostName, Normalise_Ipv6LiteralsAreCanonical) {
  EXPECT_EQ(normalise_host("[::FFFF:169.254.169.254]").name, "::ffff:169.254.169.254");
  EXPECT_TRUE(normalise_host("::1").ip_literal);
  EXPECT_NE(rejection("fe80::1%eth0"), "");
}

// --- allowlist -------------------------------------------------------------------------------

TEST(Allowlist, ExactEntry_MatchesOnlyThatName) {
  const auto list = Allowlist::parse("allow:allowed.test");
  EXPECT_TRUE(list.allows(normalise_host("allowed.test")));
  EXPECT_TRUE(list.allows(normalise_host("ALLOWED.test.")));
  EXPECT_FALSE(list.allows(normalise_host("allowed.test.evil.test")));
  EXPECT_FALSE(list.allows(normalise_host("evilallowed.test")));
  EXPECT_FALSE(list.allows(normalise_host("www.allowed.test")));
}

TEST(Allowlist, Wildcard_MatchesStrictlyDeeperNamesOnly) {
  const auto list = Allowlist::parse("*.allowed.test");
  EXPECT_TRUE(list.allows(normalise_host("a.allowed.test")));
  EXPECT_TRUE(list.allows(normalise_host("a.b.allowed.test")));
  EXPECT_FALSE(list.allows(normalise_host("allowed.test")));
  EXPECT_FALSE(list.allows(normalise_host("evilallowed.test")));
  EXPECT_FALSE(list.allows(normalise_host("allowed.test.evil.test")));
}

TEST(Allowlist, IpLiteral_AllowedOnlyWhenListed) {
  const auto list = Allowlist::parse("allow:allowed.test,192.0.2.7");
  EXPECT_TRUE(list.allows(normalise_host("192.0.2.7")));
  EXPECT_TRUE(list.allows(normalise_host("3221225991")));  // 192.0.2.7 in decimal
  EXPECT_FALSE(list.allows(normalise_host("192.0.2.8")));
  EXPECT_THROW(Allowlist::parse("*.0.2.7"), Error);  // a wildcard is never an address range
}

TEST(Allowlist, Parse_IdnaEntriesAndBadEntries) {
  EXPECT_TRUE(Allowlist::parse("bücher.example").allows(normalise_host("xn--bcher-kva.example")));
  EXPECT_THROW(Allowlist::parse("allow:a.test,,b.test"), Error);
  EXPECT_THROW(Allowlist::parse("allow:a.test,"), Error);
  EXPECT_THROW(Allowlist::parse("allow:a*.test"), Error);
  EXPECT_THROW(Allowlist::parse("allow:*.127.0.0.1"), Error);
  EXPECT_THROW(Allowlist::parse("allow:user@a.test"), Error);
}

TEST(Allowlist, FromFile_SkipsCommentsAndBlankLines) {
  TempDir dir;
  const auto file =
      dir.write("allow", "# test hosts\nallowed.test\n\n  *.wild.test  # all of them\n");
  const auto list = Allowlist::from_file(file);
  EXPECT_TRUE(list.allows(normalise_host("allowed.test")));
  EXPECT_TRUE(list.allows(normalise_host("x.wild.test")));
  EXPECT_EQ(list.entries().size(), 2u);
  EXPECT_THROW(Allowlist::from_file(dir.write("bad", "ok.test\nbad host\n")), Error);
  try {
    Allowlist::from_file(dir.write("port", "ok.test:443\nok.test:0\n"));
    ADD_FAILURE() << "port 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2: allowlist entry 'ok.test:0'"), std::string::npos)
        << e.what();
  }
}

std::optional<std::string> refusal(const Allowlist& list, const char* host, uint16_t port,
                                   bool connect) {
  return list.refusal(normalise_host(host), port, connect);
}

TEST(Allowlist, BareHost_OpensConnect443AndHttp80Only) {
  const auto list = Allowlist::parse("allow:allowed.test,*.wild.test");
  for (const char* host : {"allowed.test", "a.wild.test"}) {
    EXPECT_EQ(refusal(list, host, 443, true), std::nullopt) << host;
    EXPECT_EQ(refusal(list, host, 80, false), std::nullopt) << host;
    for (uint16_t port : {22, 25, 6379, 8080}) {
      EXPECT_NE(refusal(list, host, port, true), std::nullopt) << host << ":" << port;
      EXPECT_NE(refusal(list, host, port, false), std::nullopt) << host << ":" << port;
    }
    EXPECT_NE(refusal(list, host, 80, true), std::nullopt) << "CONNECT to 80: " << host;
    EXPECT_NE(refusal(list, host, 443, false), std::nullopt) << "plain HTTP to 443: " << host;
  }
  EXPECT_EQ(*refusal(list, "allowed.test", 22, true),
            "port 22 not allowed: allowed.test opens CONNECT to 443 and HTTP to 80 only");
  EXPECT_EQ(*refusal(list, "other.test", 443, true), "not in allowlist");
  EXPECT_EQ(*refusal(Allowlist::parse("192.0.2.7"), "192.0.2.8", 443, true), "ip literal");
}

TEST(Allowlist, HostPortRangesWildcardsAndIpv6_OpenExactlyTheirPorts) {
  const auto list = Allowlist::parse(
      "allow:git.test:22,apt.test:8000-8080,*.pkg.test:8443,[2001:db8::1]:443,192.0.2.7:5432");
  EXPECT_EQ(refusal(list, "git.test", 22, true), std::nullopt);
  EXPECT_EQ(refusal(list, "git.test", 22, false), std::nullopt);
  EXPECT_NE(refusal(list, "git.test", 443, true), std::nullopt) << "a port replaces the default";
  EXPECT_EQ(refusal(list, "apt.test", 8000, true), std::nullopt);
  EXPECT_EQ(refusal(list, "apt.test", 8080, false), std::nullopt);
  EXPECT_EQ(*refusal(list, "apt.test", 8081, true),
            "port 8081 not allowed: apt.test:8000-8080 opens 8000-8080 only");
  EXPECT_EQ(refusal(list, "a.b.pkg.test", 8443, true), std::nullopt);
  EXPECT_NE(refusal(list, "pkg.test", 8443, true), std::nullopt);
  EXPECT_NE(refusal(list, "a.pkg.test", 443, true), std::nullopt);
  EXPECT_EQ(refusal(list, "[2001:DB8::1]", 443, true), std::nullopt);
  EXPECT_EQ(refusal(list, "3221225991", 5432, true), std::nullopt);  // 192.0.2.7 in decimal
  EXPECT_EQ(list.entries(),
            (std::vector<std::string>{"192.0.2.7:5432", "[2001:db8::1]:443", "apt.test:8000-8080",
                                      "git.test:22", "*.pkg.test:8443"}));
  // Two entries for one host: either opens its ports.
  const auto both = Allowlist::parse("allow:git.test,git.test:22");
  EXPECT_EQ(refusal(both, "git.test", 22, true), std::nullopt);
  EXPECT_EQ(refusal(both, "git.test", 443, true), std::nullopt);
  EXPECT_EQ(*refusal(both, "git.test", 25, true),
            "port 25 not allowed: git.test opens CONNECT to 443 and HTTP to 80 only; git.test:22 "
            "opens 22 only");
}

std::string entry_error(const std::string& spec) {
  try {
    Allowlist::parse(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Allowlist, MalformedPortsAndHosts_RefusedNamingTheEntry) {
  for (const char* bad : {"host:", "host:0", "host:65536", "host:22-21", ":22", "host:+22",
                          "host:0x16", "host: 22", "host:22-", "host:-22", "host:1-2-3",
                          "host:99999999999", "[::1", "[::1]x", "[::1]:", "[a.test]:443",
                          "*.host:0", "a*.host:443", "host:22:23x", "*.192.0.2.7:443"}) {
    const std::string error = entry_error(bad);
    EXPECT_NE(error.find(std::string("allowlist entry '") + bad + "'"), std::string::npos)
        << bad << ": " << error;
  }
  EXPECT_NE(entry_error("host:").find("missing port"), std::string::npos);
  EXPECT_NE(entry_error("host:65536").find("out of range"), std::string::npos);
  EXPECT_NE(entry_error("host:22-21").find("backwards"), std::string::npos);
  EXPECT_NE(entry_error(":22").find("missing host"), std::string::npos);
  EXPECT_EQ(entry_error("host:1-65535"), "");
  EXPECT_EQ(entry_error("::1"), "") << "a bare IPv6 literal is an address, not a host and port";
}

// --- addresses -------------------------------------------------------------------------------

TEST(AddressPolicy, BlocksEveryInternalIpv4Range) {
  for (const char* a :
       {"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1",
        "127.255.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "192.0.0.170", "198.18.0.1", "198.19.255.254", "224.0.0.1", "239.255.255.250", "240.0.0.1",
        "255.255.255.255"}) {
    EXPECT_TRUE(blocked(a)) << a;
  }
  for (const char* a : {"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "172.15.255.255",
                        "172.32.0.0", "192.0.2.1", "198.51.100.1", "203.0.113.1", "169.253.0.1"}) {
    EXPECT_FALSE(blocked(a)) << a;
  }
}

TEST(AddressPolicy, BlocksIpv6RangesAndIpv4InDisguise) {
  for (const char* a : {"::",
                        "::1",
                        "fc00::1",
                        "fd12:3456::1",
                        "fe80::1",
                        "febf::1",
                        "fec0::1",
                        "ff02::1",
                        "::ffff:169.254.169.254",
                        "::ffff:127.0.0.1",
                        "::ffff:10.0.0.1",
                        "::ffff:0:a9fe:a9fe",
                        "64:ff9b::a9fe:a9fe",
                        "64:ff9b::7f00:1",
                        "64:ff9b:1::1",
                        "2002:a9fe:a9fe::1",
                        "2002:7f00:1::",
                        "::a9fe:a9fe",
                        "::808:808",
                        "2001:0:4136:e378::1",
                        "100::1"}) {
    EXPECT_TRUE(blocked(a)) << a;
  }
  for (const char* a : {"2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
                        "64:ff9b::808:808", "2002:808:808::1", "2001:db8::1"}) {
    EXPECT_FALSE(blocked(a)) << a;
  }
}

TEST(AddressPolicy, AllowCidr_OpensOnlyThatRange) {
  const AddressPolicy policy({Cidr::parse("127.0.0.0/8"), Cidr::parse("fd00::/8")});
  EXPECT_FALSE(blocked("127.0.0.1", policy));
  EXPECT_FALSE(blocked("::ffff:127.0.0.1", policy));
  EXPECT_FALSE(blocked("fd00::5", policy));
  EXPECT_TRUE(blocked("10.0.0.1", policy));
  EXPECT_TRUE(blocked("169.254.169.254", policy));
  EXPECT_TRUE(blocked("::1", policy));
  EXPECT_EQ(*AddressPolicy().blocked_range(*IpAddress::parse("169.254.169.254")),
            "link-local/metadata 169.254.0.0/16");
}

TEST(AddressPolicy, AllowCidr_OverlappingSandcellsOwnRange_Refused) {
  for (const char* range : {"198.18.0.0/15", "198.19.4.0/30", "198.18.0.1", "198.0.0.0/8",
                            "0.0.0.0/0", "::ffff:198.18.0.1", "::ffff:0:0/96", "::/0"}) {
    try {
      AddressPolicy({Cidr::parse(range)});
      ADD_FAILURE() << range << " opened";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("overlaps 198.18.0.0/15"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(AddressPolicy({Cidr::parse("198.20.0.0/16"), Cidr::parse("198.16.0.0/15")}));
}

TEST(AddressPolicy, AddressOfThisHost_LoopbackUnspecifiedAndMappedForms) {
  for (const char* a : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "0.0.0.0", "0.1.2.3", "::1",
                        "::", "::ffff:127.0.0.2", "::ffff:0.0.0.0"}) {
    EXPECT_NE(address_of_this_host(*IpAddress::parse(a)), std::nullopt) << a;
  }
  // 2001:db8::/32 and 203.0.113.0/24 are documentation ranges no real interface carries.
  for (const char* a : {"203.0.113.77", "2001:db8::77", "::ffff:203.0.113.77"})
    EXPECT_EQ(address_of_this_host(*IpAddress::parse(a)), std::nullopt) << a;
}

TEST(AddressPolicy, CidrParse_RejectsBadRanges) {
  EXPECT_EQ(Cidr::parse("10.0.0.0/8").to_string(), "10.0.0.0/8");
  EXPECT_EQ(Cidr::parse("192.0.2.1").prefix_length(), 32u);
  for (const char* bad :
       {"10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/8x", "nope/8", "::1/129", "127.1/8"}) {
    EXPECT_THROW(Cidr::parse(bad), Error) << bad;
  }
  sockaddr_in any{};
  any.sin_family = AF_INET;
  EXPECT_TRUE(AddressPolicy().is_blocked(reinterpret_cast<const sockaddr*>(&any)));
}

// --- resolvers -------------------------------------------------------------------------------

TEST(Resolver, HostsFile_IsTheOnlySource) {
  TempDir dir;
  const auto file = dir.write("hosts",
                              "# test internet\n192.0.2.10 Allowed.TEST www.allowed.test\n"
                              "2001:db8::10 allowed.test\n\n");
  const auto resolver = Resolver::from_hosts_file(file);
  const auto found = resolver.resolve("allowed.test");
  ASSERT_EQ(found.addresses.size(), 2u);
  EXPECT_EQ(found.addresses[0].to_string(), "192.0.2.10");
  EXPECT_EQ(found.addresses[1].to_string(), "2001:db8::10");
  EXPECT_EQ(resolver.resolve("www.allowed.test").addresses.size(), 1u);
  EXPECT_TRUE(resolver.resolve("localhost").addresses.empty());
  EXPECT_FALSE(resolver.resolve("localhost").error.empty());
  EXPECT_THROW(Resolver::from_hosts_file(dir.write("bad", "999.1.1.1 x.test\n")), Error);
  EXPECT_THROW(Resolver::from_hosts_file(dir.path_of_missing()), Error);
}

TEST(ResolvConf, LoopbackStub_IsReplacedByUpstreams) {
  TempDir dir;
  const auto stub =
      dir.write("resolv.conf", "nameserver 127.0.0.53\noptions edns0\nsearch corp.test\n");
  const auto upstream = dir.write("upstream", "nameserver 10.0.0.2\nnameserver 2001:db8::53\n");
  const auto dns = sandbox_dns(stub, upstream);
  ASSERT_EQ(dns.resolvers.size(), 1u);
  EXPECT_EQ(dns.resolvers[0].to_string(), "10.0.0.2");
  EXPECT_EQ(dns.resolv_conf, "nameserver 10.0.0.2\nsearch corp.test\n");

  const auto direct =
      dir.write("direct", "nameserver 192.168.1.1 # router\nnameserver 192.168.1.1\n");
  EXPECT_EQ(sandbox_dns(direct, upstream).resolv_conf, "nameserver 192.168.1.1\n");
}

TEST(SandboxFilter, HostAddresses_DroppedAndRememberedBeforeOpenedRanges) {
  const std::string script = sandbox_filter_script(
      {Cidr::parse("10.0.0.0/8")}, {},
      {*IpAddress::parse("10.0.0.5"), *IpAddress::parse("203.0.113.5"),
       *IpAddress::parse("10.0.0.5"), *IpAddress::parse("2001:db8::5")});
  const std::string host_rule =
      "output ip daddr { 10.0.0.5, 203.0.113.5 } meta l4proto { tcp, udp } add @dropped { ip "
      "daddr . meta l4proto . th dport } drop\n";
  ASSERT_NE(script.find(host_rule), std::string::npos) << script;
  EXPECT_LT(script.find(host_rule), script.find("output ip daddr { 10.0.0.0/8 } accept")) << script;
}

TEST(SandboxFilter, ProxyOnly_RemembersAllButTheProxyAndDropsNothing) {
  const std::string script = proxy_only_filter_script(*IpAddress::parse("198.18.0.1"), 40000);
  EXPECT_NE(script.find("output ip daddr 198.18.0.1 tcp dport 40000 accept\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("output meta nfproto ipv4 meta l4proto { tcp, udp } add @dropped { ip "
                        "daddr . meta l4proto . th dport }\n"),
            std::string::npos)
      << script;
  EXPECT_EQ(script.find(" drop\n"), std::string::npos) << "the host's table drops: " << script;
}

TEST(SandboxFilter, DropsBlockedRangesButOpensResolversOnPort53AndAllowedCidrs) {
  const std::string script = sandbox_filter_script(
      {Cidr::parse("10.1.2.0/24"), Cidr::parse("fc00::/7")},
      {*IpAddress::parse("10.0.0.53"), *IpAddress::parse("10.0.0.53"), *IpAddress::parse("::1")});
  EXPECT_NE(script.find("169.254.0.0/16"), std::string::npos) << script;
  EXPECT_NE(script.find("output oifname \"lo\" accept\n"), std::string::npos) << script;
  EXPECT_NE(script.find("output meta nfproto != ipv4 drop\n"), std::string::npos) << script;
  EXPECT_NE(script.find("output ip daddr { 10.1.2.0/24 } accept\n"), std::string::npos) << script;
  EXPECT_NE(script.find("output ip daddr { 10.0.0.53 } meta l4proto { tcp, udp } th dport 53 accept\n"),
            std::string::npos) << script;
  // The drops come last (the openings above them win), and remember where they went.
  EXPECT_TRUE(script.ends_with(
      "output ip daddr @blocked meta l4proto { tcp, udp } add @dropped { ip daddr . meta l4proto . "
      "th dport } drop\n"
      "add rule inet sandcell output ip daddr @blocked add @dropped { ip daddr . meta l4proto . 0 "
      "} "
      "drop\n"))
      << script;
  EXPECT_NE(script.find(
                "dropped { type ipv4_addr . inet_proto . inet_service; flags dynamic; size 256; }"),
            std::string::npos)
      << script;
  const std::string bare = sandbox_filter_script({}, {});  // nothing opened: no accept after lo
  EXPECT_EQ(bare.find("accept\n", bare.find("nfproto")), std::string::npos) << bare;
}

// `nft -j list set inet sandcell dropped` as nft 1.0.6 prints it (a protocol it has no name for
// comes as a number, and without /etc/protocols every protocol does); an empty set has no "elem".
TEST(SandboxFilter, DroppedFlowsAreReadFromNftsJsonListing) {
  const auto flows = parse_dropped_flows(R"({"nftables": [{"metainfo": {"version": "1.0.6"}},
    {"set": {"family": "inet", "name": "dropped", "table": "sandcell",
     "type": ["ipv4_addr", "inet_proto", "inet_service"], "handle": 2, "size": 256,
     "elem": [{"concat": ["169.254.169.254", "tcp", 80]}, {"concat": ["10.0.0.1", "icmp", 0]},
              {"concat": ["10.0.0.2", 132, 0]}, {"concat": ["10.0.0.3", 6, 443]},
              {"concat": ["10.0.0.4", 17, 53]}]}}]})");
  ASSERT_EQ(flows.size(), 5u);
  EXPECT_EQ(flows[0].address.to_string(), "169.254.169.254");
  EXPECT_EQ(flows[0].protocol, "tcp");
  EXPECT_EQ(flows[0].port, 80);
  EXPECT_EQ(flows[1].protocol, "icmp");
  EXPECT_EQ(flows[1].port, 0);
  EXPECT_EQ(flows[2].protocol, "132");
  // Without /etc/protocols nft prints even tcp and udp as numbers (found in the VM guest).
  EXPECT_EQ(flows[3].protocol, "tcp");
  EXPECT_EQ(flows[4].protocol, "udp");
  EXPECT_TRUE(parse_dropped_flows(R"({"nftables": [{"set": {"name": "dropped6"}}]})").empty());
}

// nft's listings were the one JSON input parsed without the depth bound: an element nested
// 100,000 levels deep was read (and a dump of it, in an error message, recursed once per level).
TEST(SandboxFilter, DeeplyNestedNftListingIsAParseError) {
  const std::string deep = R"({"nftables": [{"set": {"name": "dropped", "elem": [)" + std::string(100000, '[') +
                           std::string(100000, ']') + "]}}]}";
  EXPECT_THROW(parse_dropped_flows(deep), nlohmann::json::parse_error);
}

TEST(Veth, IdForRun_IsEightHexDigitsAndStable) {
  const auto id = veth_id_for("run-1234");
  EXPECT_EQ(id.size(), 8u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(id, veth_id_for("run-1234"));
  EXPECT_NE(id, veth_id_for("run-1235"));
  EXPECT_EQ(("sc-" + id + "h").size(), 12u);  // fits IFNAMSIZ (16 with the NUL)
}

// --- the proxy on loopback --------------------------------------------------------------------

int connect_loopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) ADD_FAILURE() << "connect";
  return fd;
}

void send_text(int fd, const std::string& text) {
  ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// Reads until `marker` was seen (a response head), or until EOF when marker is empty.
std::string read_until(int fd, const std::string& marker = "") {
  std::string in;
  char buffer[4096];
  while (marker.empty() || in.find(marker) == std::string::npos) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    in.append(buffer, static_cast<size_t>(n));
  }
  return in;
}

class Connection {
 public:
  explicit Connection(uint16_t port) : fd_(connect_loopback(port)) {}
  ~Connection() { close(fd_); }
  int fd() const { return fd_; }
  std::string exchange(const std::string& request) {
    send_text(fd_, request);
    return read_until(fd_);
  }

 private:
  int fd_;
};

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_.Get("/hello", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("hello from " + req.get_header_value("Host") + " " + req.target,
                      "text/plain");
    });
    upstream_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("echo " + req.body, "text/plain");
    });
    upstream_port_ = static_cast<uint16_t>(upstream_.bind_to_any_port("127.0.0.1"));
    ASSERT_GT(upstream_port_, 0);
    upstream_thread_ = std::thread([this] { upstream_.listen_after_bind(); });
    // httplib's stop() is a no-op until the accept loop runs: wait for it, or TearDown hangs.
    while (!upstream_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    hosts_ = dir_.write("hosts",
                        "127.0.0.1 allowed.test a.wild.test unlisted.test\n127.0.0.99 self.wild.test\n"
                        "169.254.169.254 meta.test\n"
                        "192.0.2.1 mixed.test\n127.0.0.1 mixed.test\n");
  }
  void TearDown() override {
    upstream_.stop();
    upstream_thread_.join();
  }

  // The upstream is on loopback, so reaching it needs the 127/8 override, and a narrower idea of
  // the host's own addresses than the proxy's (which always include 127/8): only 127.0.0.99.
  // AddressOfThisHost_RefusedWhateverAllowCidrOpens runs the real one. The upstream's port is
  // ephemeral: allowed.test and *.wild.test open all ports above 1023.
  ProxyConfig config(bool open_loopback = true) const {
    ProxyConfig c;
    c.allowlist = Allowlist::parse(
        "allow:allowed.test:1024-65535,*.wild.test:1024-65535,meta.test,mixed.test");
    c.resolver = Resolver::from_hosts_file(hosts_);
    if (open_loopback) c.address_policy = AddressPolicy({Cidr::parse("127.0.0.0/8")});
    c.host_address = [](const IpAddress& a) -> std::optional<std::string> {
      if (a == *IpAddress::parse("127.0.0.99")) return "the test's host address";
      return std::nullopt;
    };
    c.idle_timeout = std::chrono::seconds(5);
    c.connect_timeout = std::chrono::seconds(2);
    return c;
  }
  std::string target(const std::string& host) const {
    return host + ":" + std::to_string(upstream_port_);
  }

  TempDir dir_;
  fs::path hosts_;
  httplib::Server upstream_;
  uint16_t upstream_port_ = 0;
  std::thread upstream_thread_;
};

TEST_F(ProxyTest, Connect_AllowedHost_Answers200ThenTunnels) {
  Proxy proxy(config());
  Connection c(proxy.port());
  send_text(c.fd(), "CONNECT " + target("allowed.test") + " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(read_until(c.fd(), "\r\n\r\n").starts_with("HTTP/1.1 200 "));
  const auto reply =
      c.exchange("GET /hello HTTP/1.1\r\nHost: tunnel.test\r\nConnection: close\r\n\r\n");
  EXPECT_NE(reply.find("hello from tunnel.test /hello"), std::string::npos) << reply;
  EXPECT_EQ(proxy.allowed_count(), 1u);
  EXPECT_TRUE(proxy.blocked().empty());
}

TEST_F(ProxyTest, Connect_BytesSentWithTheRequest_ReachTheUpstream) {
  Proxy proxy(config());
  Connection c(proxy.port());
  const auto reply = c.exchange("CONNECT " + target("a.wild.test") + " HTTP/1.1\r\n\r\n" +
                                "GET /hello HTTP/1.1\r\nHost: early\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 "));
  EXPECT_NE(reply.find("hello from early /hello"), std::string::npos) << reply;
}

TEST_F(ProxyTest, Connect_NotInAllowlist_403AndLogged) {
  Proxy proxy(config());
  const auto reply =
      Connection(proxy.port()).exchange("CONNECT Unlisted.TEST.:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403 Forbidden")) << reply;
  EXPECT_TRUE(reply.ends_with("\r\n\r\nnot in allowlist\n")) << reply;
  const auto blocked = proxy.blocked();
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0].host, "unlisted.test");
  EXPECT_EQ(blocked[0].port, 443);
  EXPECT_EQ(blocked[0].reason, "not in allowlist");
  EXPECT_EQ(proxy.allowed_count(), 0u);
}

TEST_F(ProxyTest, Connect_PortNotOpened_403NamingTheRuleAndLogged) {
  Proxy proxy(config());
  const auto reply = Connection(proxy.port()).exchange("CONNECT meta.test:22 HTTP/1.1\r\n\r\n");
  const std::string rule = "port 22 not allowed: meta.test opens CONNECT to 443 and HTTP to 80 only";
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403 Forbidden")) << reply;
  EXPECT_TRUE(reply.ends_with("\r\n\r\n" + rule + "\n")) << reply;
  const auto get = Connection(proxy.port()).exchange("GET http://allowed.test:80/ HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(get.starts_with("HTTP/1.1 403 Forbidden")) << get;
  const auto blocked = proxy.blocked();
  ASSERT_EQ(blocked.size(), 2u);
  EXPECT_EQ(blocked[0].host, "meta.test");
  EXPECT_EQ(blocked[0].port, 22);
  EXPECT_EQ(blocked[0].reason, rule);
  EXPECT_EQ(blocked[1].reason,
            "port 80 not allowed: allowed.test:1024-65535 opens 1024-65535 only");
  EXPECT_EQ(proxy.allowed_count(), 0u);
}

TEST_F(ProxyTest, Connect_AddressOfThisHost_RefusedWhateverAllowCidrOpens) {
  Proxy seam(config());  // the test's narrower host: 127.0.0.99 only
  Connection(seam.port()).exchange("CONNECT self.wild.test:" + std::to_string(upstream_port_) +
                                   " HTTP/1.1\r\n\r\n");
  ASSERT_EQ(seam.blocked().size(), 1u);
  EXPECT_EQ(seam.blocked()[0].reason, "resolves to blocked address: the test's host address");
  auto real = config();
  real.host_address = address_of_this_host;  // what a run uses: 127/8 is the host's own
  Proxy proxy(std::move(real));
  const auto reply =
      Connection(proxy.port()).exchange("CONNECT " + target("allowed.test") + " HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
  ASSERT_EQ(proxy.blocked().size(), 1u);
  EXPECT_EQ(proxy.blocked()[0].reason, "resolves to blocked address: this host's loopback");
  EXPECT_EQ(proxy.allowed_count(), 0u);
}

TEST_F(ProxyTest, Connect_NameResolvingToLoopback_BlockedWithoutOverride) {
  Proxy proxy(config(false));
  const auto reply =
      Connection(proxy.port()).exchange("CONNECT " + target("allowed.test") + " HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
  ASSERT_EQ(proxy.blocked().size(), 1u);
  EXPECT_EQ(proxy.blocked()[0].reason, "resolves to blocked address 127.0.0.1");
}

TEST_F(ProxyTest, Connect_AnyBlockedAddressOfAName_Refuses) {
  Proxy proxy(config(false));
  Connection(proxy.port()).exchange("CONNECT mixed.test:443 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(proxy.blocked().size(), 1u);
  EXPECT_EQ(proxy.blocked()[0].reason, "resolves to blocked address 127.0.0.1");
}

TEST_F(ProxyTest, Connect_MetadataAddress_BlockedEvenWithLoopbackOpen) {
  Proxy proxy(config());
  const auto reply = Connection(proxy.port()).exchange("CONNECT meta.test:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
  EXPECT_EQ(proxy.blocked().at(0).reason, "resolves to blocked address 169.254.169.254");
}

TEST_F(ProxyTest, Connect_IpLiteralsAndUserinfo_Refused) {
  Proxy proxy(config());
  for (const char* t : {"127.0.0.1", "2130706433", "0x7f000001", "127.1", "[::1]"}) {
    const auto reply =
        Connection(proxy.port()).exchange(std::string("CONNECT ") + t + ":443 HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << t << ": " << reply;
  }
  const auto userinfo =
      Connection(proxy.port()).exchange("CONNECT allowed.test@evil.test:443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(userinfo.starts_with("HTTP/1.1 403")) << userinfo;
  const auto get_userinfo =
      Connection(proxy.port()).exchange("GET http://allowed.test@evil.test/ HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(get_userinfo.starts_with("HTTP/1.1 403")) << get_userinfo;
  const auto blocked = proxy.blocked();
  ASSERT_EQ(blocked.size(), 7u);
  EXPECT_EQ(blocked[0].reason, "ip literal");
  EXPECT_EQ(blocked[0].host, "127.0.0.1");
  EXPECT_EQ(blocked[4].host, "::1");
  EXPECT_EQ(blocked[5].reason, "userinfo in request target");
  EXPECT_EQ(blocked[6].reason, "userinfo in request target");
  EXPECT_EQ(proxy.allowed_count(), 0u);
}

TEST_F(ProxyTest, AbsoluteFormGet_ForwardedInOriginFormWithHostRewritten) {
  Proxy proxy(config());
  const auto reply = Connection(proxy.port())
                         .exchange("GET http://" + target("ALLOWED.test") +
                                   "/hello?x=1 HTTP/1.1\r\nHost: evil.test\r\n"
                                   "Proxy-Connection: keep-alive\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << reply;
  EXPECT_NE(reply.find("hello from " + target("allowed.test") + " /hello?x=1"), std::string::npos)
      << reply;
  EXPECT_EQ(proxy.allowed_count(), 1u);
}

TEST_F(ProxyTest, AbsoluteFormPost_ForwardsContentLengthAndChunkedBodies) {
  Proxy proxy(config());
  const auto sized = Connection(proxy.port())
                         .exchange("POST http://" + target("allowed.test") +
                                   "/echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_NE(sized.find("echo hello"), std::string::npos) << sized;
  const auto chunked = Connection(proxy.port())
                           .exchange("POST http://" + target("allowed.test") +
                                     "/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(chunked.find("echo abcde"), std::string::npos) << chunked;
}

TEST_F(ProxyTest, MalformedOrNonProxyRequests_400) {
  Proxy proxy(config());
  for (const std::string& request :
       {std::string("BLAH\r\n\r\n"),
        std::string("GET /hello HTTP/1.1\r\nHost: allowed.test\r\n\r\n"),
        std::string("GET https://allowed.test/ HTTP/1.1\r\n\r\n"),
        std::string("CONNECT allowed.test HTTP/1.1\r\n\r\n"),
        std::string("GET http://allowed.test/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
                    "chunked\r\n\r\n")}) {
    const auto reply = Connection(proxy.port()).exchange(request);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400 Bad Request")) << request << ": " << reply;
  }
  EXPECT_EQ(proxy.allowed_count(), 0u);
  EXPECT_EQ(proxy.blocked_count(), 5u);
}

TEST_F(ProxyTest, OversizedHeader_431) {
  Proxy proxy(config());
  const auto reply =
      Connection(proxy.port())
          .exchange("GET http://allowed.test/ HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') +
                    "\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 431")) << reply.substr(0, 100);
}

TEST_F(ProxyTest, ClientsBeyondTheLimit_503) {
  auto c = config();
  c.max_clients = 1;
  Proxy proxy(std::move(c));
  Connection idle(proxy.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // accepted and waiting
  const auto reply = Connection(proxy.port()).exchange("CONNECT allowed.test:1 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
}

TEST_F(ProxyTest, Stop_ClosesOpenTunnelsPromptly) {
  Proxy proxy(config());
  Connection c(proxy.port());
  send_text(c.fd(), "CONNECT " + target("allowed.test") + " HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(read_until(c.fd(), "\r\n\r\n").starts_with("HTTP/1.1 200"));
  const auto start = std::chrono::steady_clock::now();
  proxy.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(read_until(c.fd()), "");  // EOF
  proxy.stop();                       // idempotent
}

}  // namespace
}  // namespace sandcell::network
