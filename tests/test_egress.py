"""Egress bypass attempts (URL-09..12, URL-17, URL-18, GUIDE: Security).

Name resolution is injected: the resolver records every lookup and answers from a table,
so no test performs DNS or sends traffic anywhere."""

import pytest

from collection.fetch.egress import Egress, EgressRefused, address_problem, parse_resolve

ALLOWED = ("https://www.example.com", "https://evil.example.com")


class Resolver:
    def __init__(self, table):
        self.table = table
        self.calls = []

    def __call__(self, host, port):
        self.calls.append((host, port))
        if host not in self.table:
            raise OSError("no such host")
        return self.table[host]


def _egress(table=None, resolve_map=None):
    resolver = Resolver({"www.example.com": ["93.184.216.34"]} if table is None else table)
    return Egress(resolve_map, resolver), resolver


@pytest.mark.parametrize("url", [
    "https://2130706433/",                     # decimal 127.0.0.1
    "https://0177.0.0.1/",                     # octal
    "https://0x7f.0.0.1/",                     # hex
    "https://0x7f000001/",                     # hex whole
    "https://127.1/",                          # short form
    "https://127.0.0.1/",                      # dotted quad
    "https://[::1]/",                          # IPv6 literal
    "https://[::ffff:127.0.0.1]/",             # mapped literal
    "https://www.example.com@127.0.0.1/",      # userinfo trick
    "https://www.example.com:pw@evil.example.com/",  # userinfo on an allowed host
    "https://user@www.example.com/",           # userinfo
    "https://www.example.com\\@127.0.0.1/",    # backslash
    "https://www.example.com\\.evil.net/",     # backslash in host
    "https://www.example.com /x",              # whitespace
    "https://www.example.com\t/x",             # tab
    "https://www.example.com\n.evil/x",        # newline
    "https://www.example.com./",               # trailing dot
    "https://www.exаmple.com/",                # Cyrillic а (non-ASCII host)
    "https://www.example.com:8443/",           # other port (URL-11)
    "https://www.example.com:80/",             # other port
    "http://www.example.com/",                 # not https (URL-09)
    "https://www.example.com.evil.net/",       # suffix trick
    "https://evil.net/#https://www.example.com",
    "https://[fe80::1%25eth0]/",               # zone id
    "https://1.1.1.1.nip.io/",                 # not in the allowlist
])
def test_url_level_bypasses_are_refused_without_a_lookup(url):  # URL-09..URL-12
    egress, resolver = _egress()
    with pytest.raises(EgressRefused) as info:
        egress.check_url(url, ALLOWED)
    assert info.value.code == "skipped_origin"
    assert resolver.calls == []


@pytest.mark.parametrize("address", [
    "127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "100.127.255.254", "0.0.0.0", "224.0.0.1", "240.0.0.1", "255.255.255.255", "192.0.2.1",
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "2002:7f00:1::1", "2001:0:4136:e378::1",
    "64:ff9b::7f00:1", "64:ff9b:1::1", "2001:db8::1",
])
def test_dns_names_resolving_to_unroutable_addresses_are_refused(address):  # URL-17, URL-18
    egress, resolver = _egress({"evil.example.com": [address]})
    with pytest.raises(EgressRefused) as info:
        egress.check_url("https://evil.example.com/x", ALLOWED)
    assert info.value.code == "egress_refused"
    assert address_problem(address) is not None


def test_one_bad_address_among_good_ones_refuses_the_host():
    egress, _ = _egress({"evil.example.com": ["93.184.216.34", "10.1.1.1"]})
    with pytest.raises(EgressRefused):
        egress.check_url("https://evil.example.com/", ALLOWED)


def test_public_address_passes_and_is_pinned():  # resolve once, connect to what was checked
    egress, resolver = _egress({"www.example.com": ["93.184.216.34"]})
    first = egress.check_url("https://www.example.com/a", ALLOWED)
    resolver.table["www.example.com"] = ["127.0.0.1"]          # DNS rebinding
    second = egress.check_url("https://www.example.com/b", ALLOWED)
    assert first == second and first.address == "93.184.216.34" and not first.mapped
    assert resolver.calls == [("www.example.com", 443)]


def test_operator_mapping_skips_address_rules_and_dns():  # --resolve
    egress, resolver = _egress(resolve_map={("www.example.com", 443): ("127.0.0.1", 8443)})
    target = egress.check_url("https://www.example.com/x", ALLOWED)
    assert (target.host, target.address, target.connect_port, target.mapped) == ("www.example.com", "127.0.0.1", 8443, True)
    assert resolver.calls == []


def test_mapping_does_not_widen_the_allowlist():  # URL-10: --resolve moves TCP, not the allowlist
    egress, _ = _egress(resolve_map={("other.example.org", 443): ("127.0.0.1", 8443)})
    with pytest.raises(EgressRefused) as info:
        egress.check_url("https://other.example.org/", ALLOWED)
    assert info.value.code == "skipped_origin"


def test_failed_lookup_is_not_cached():  # D-08: a DNS hiccup may be transient
    egress, resolver = _egress({})
    with pytest.raises(EgressRefused) as info:
        egress.check_url("https://www.example.com/", ALLOWED)
    assert info.value.code == "connection_error"
    resolver.table["www.example.com"] = ["93.184.216.34"]
    assert egress.check_url("https://www.example.com/", ALLOWED).address == "93.184.216.34"


@pytest.mark.parametrize("text, expected", [
    ("www.example.com:443:127.0.0.1:8443", (("www.example.com", 443), ("127.0.0.1", 8443))),
    ("WWW.Example.com:443:[::1]:9000", (("www.example.com", 443), ("::1", 9000))),
])
def test_parse_resolve(text, expected):
    assert parse_resolve(text) == expected


@pytest.mark.parametrize("text", ["www.example.com:443:127.0.0.1", "www.example.com:443:localhost:80",
                                  ":443:127.0.0.1:80", "h:99999:127.0.0.1:80", "h:x:127.0.0.1:80"])
def test_parse_resolve_refuses_malformed(text):
    with pytest.raises(ValueError):
        parse_resolve(text)


def test_global_addresses_pass():
    for address in ("93.184.216.34", "8.8.8.8", "2606:4700::1111"):
        assert address_problem(address) is None
