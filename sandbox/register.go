package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// rdapBootstrap serves an IANA-format dns.json listing the sandbox RDAP
// server for its RDAP TLDs and the 404-everything relay for the relay TLDs.
// Some bases lack the trailing "/", as real entries sometimes do.
func (s *Sandbox) rdapBootstrap(w http.ResponseWriter, r *http.Request) {
	base := s.ep.HTTP
	var rdapTLDs, relayTLDs []string
	for _, t := range TLDs() {
		switch tldRoles[t] {
		case tldRDAP:
			rdapTLDs = append(rdapTLDs, t)
		case tldRelay:
			relayTLDs = append(relayTLDs, t)
		}
	}
	doc := map[string]any{
		"description": "RDAP bootstrap file for Domain Name System registrations (baton sandbox)",
		"publication": s.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
		"services": [][][]string{
			{rdapTLDs, {base + "/rdap/"}},
			{relayTLDs, {base + "/rdap-relay"}},
		},
		"version": "1.0",
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// rdapRelay answers 404 for every name, like a relay with no service.
func (s *Sandbox) rdapRelay(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/rdap+json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"rdapConformance":["rdap_level_0"],"errorCode":404,"title":"Not Found","description":["No RDAP service is available for this resource"]}`)
}

func (s *Sandbox) rdapDomain(w http.ResponseWriter, r *http.Request) {
	name := strings.ToLower(strings.TrimSuffix(r.PathValue("name"), "."))
	if tldRoles[tldOf(name)] != tldRDAP {
		s.rdapRelay(w, r)
		return
	}
	if s.httpFailure(w, r, s.failure(name, StepRegister)) {
		return
	}
	p := planFor(name, StepRegister)
	if p.final == fAvailable {
		// Verisign answers 404 with an empty body; others send an RDAP error.
		if t := tldOf(name); t == "com" || t == "net" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/rdap+json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"rdapConformance":["rdap_level_0"],"errorCode":404,"title":"Not Found","description":["The domain does not exist."]}`)
		return
	}
	w.Header().Set("Content-Type", "application/rdap+json")
	json.NewEncoder(w).Encode(s.rdapObject(name, p.final))
}

func (s *Sandbox) rdapObject(name, final string) map[string]any {
	h := bucket(name, "regdate")
	reg := time.Date(2000+int(h%20), time.Month(1+h%12), 1+int(h%28), 4, 5, 6, 0, time.UTC)
	exp := s.cfg.Now().UTC().AddDate(1, 0, 0).Format("2006-01-02T15:04:05.000Z")
	status := []string{"client delete prohibited", "client transfer prohibited", "client update prohibited"}
	switch final {
	case fDropping:
		status = []string{"pending delete", "redemption period"}
		exp = "294247-01-10T04:00:54.775Z" // the absurd date real servers send (providers.md)
	case fReserved:
		status = []string{"server hold", "server transfer prohibited", "inactive"}
	}
	obj := map[string]any{
		"rdapConformance": []string{"rdap_level_0", "icann_rdap_technical_implementation_guide_0"},
		"objectClassName": "domain",
		"handle":          fmt.Sprintf("%d_DOMAIN_%s-SBX", h*7919, strings.ToUpper(tldOf(name))),
		"ldhName":         name,
		"status":          status,
		"events": []map[string]string{
			{"eventAction": "registration", "eventDate": reg.Format("2006-01-02T15:04:05.000Z")},
			{"eventAction": "expiration", "eventDate": exp},
			{"eventAction": "last update of RDAP database", "eventDate": s.cfg.Now().UTC().Format("2006-01-02T15:04:05.000Z")},
		},
		"nameservers": []map[string]string{
			{"objectClassName": "nameserver", "ldhName": "ns1.sandbox-dns.test"},
			{"objectClassName": "nameserver", "ldhName": "ns2.sandbox-dns.test"},
		},
		"notices": []map[string]any{{"title": "Simulated", "description": []string{"Served by the baton provider sandbox."}}},
	}
	if final == fReserved {
		obj["remarks"] = []map[string]any{{"title": "Reserved", "description": []string{"This name is reserved by the registry."}}}
	}
	return obj
}

// serveWHOIS accepts WHOIS queries until the listener closes.
func (s *Sandbox) serveWHOIS() {
	for {
		conn, err := s.wl.Accept()
		if err != nil {
			return
		}
		s.conns.Store(conn, struct{}{})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.conns.Delete(conn)
			defer conn.Close()
			s.whoisConn(conn)
		}()
	}
}

func (s *Sandbox) whoisConn(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, 1024)).ReadString('\n')
	if err != nil {
		return
	}
	name := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(line), "."))
	switch s.failure(name, StepRegister) {
	case t429:
		io.WriteString(conn, "WHOIS LIMIT EXCEEDED - SEE WWW.PIR.ORG/WHOIS FOR DETAILS\r\n")
		return
	case t5xx:
		return // closed without an answer
	case tTimeout:
		conn.SetReadDeadline(time.Now().Add(s.cfg.Hang))
		io.Copy(io.Discard, conn) // until the client hangs up or Hang passes
		return
	}
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, s.whoisText(name, planFor(name, StepRegister).final))
}

func (s *Sandbox) whoisText(name, final string) string {
	tld := tldOf(name)
	if final == fAvailable {
		switch tld {
		case "com", "net":
			return fmt.Sprintf("No match for \"%s\".\r\n>>> Last update of whois database: %s <<<\r\n\r\n"+
				"NOTICE: The expiration date displayed in this record is the date the\r\nregistrar's sponsorship of the domain name registration in the registry is\r\ncurrently set to expire.\r\n",
				strings.ToUpper(name), s.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"))
		case "cn":
			return "No matching record.\r\n"
		case "org", "info":
			return "Domain not found.\r\n>>> Last update of WHOIS database: " + s.cfg.Now().UTC().Format(time.RFC3339) + " <<<\r\n"
		default:
			return "The queried object does not exist: DOMAIN NOT FOUND\r\n"
		}
	}
	status := []string{"clientTransferProhibited https://icann.org/epp#clientTransferProhibited"}
	switch final {
	case fDropping:
		status = []string{"pendingDelete https://icann.org/epp#pendingDelete", "redemptionPeriod https://icann.org/epp#redemptionPeriod"}
	case fReserved:
		status = []string{"serverHold https://icann.org/epp#serverHold"}
	}
	var b strings.Builder
	if tld == "cn" {
		fmt.Fprintf(&b, "Domain Name: %s\r\nROID: 20030312s10001s0000%04d-cn\r\n", name, bucket(name, "roid"))
		for _, st := range status {
			fmt.Fprintf(&b, "Domain Status: %s\r\n", strings.Fields(st)[0])
		}
		b.WriteString("Registrant: 沙箱科技有限公司\r\nSponsoring Registrar: 阿里云计算有限公司（万网）\r\nName Server: ns1.sandbox-dns.test\r\nRegistration Time: 2012-03-05 10:11:12\r\nExpiration Time: 2030-03-05 10:11:12\r\nDNSSEC: unsigned\r\n")
		return b.String()
	}
	fmt.Fprintf(&b, "   Domain Name: %s\r\n   Registry Domain ID: %d_DOMAIN-SBX\r\n   Registrar WHOIS Server: whois.sandbox-registrar.test\r\n", strings.ToUpper(name), bucket(name, "id")*7919)
	for _, st := range status {
		fmt.Fprintf(&b, "   Domain Status: %s\r\n", st)
	}
	b.WriteString("   Name Server: NS1.SANDBOX-DNS.TEST\r\n   DNSSEC: unsigned\r\n>>> Last update of whois database: " + s.cfg.Now().UTC().Format(time.RFC3339) + " <<<\r\n")
	return b.String()
}
