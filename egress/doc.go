// Package egress is the connect-time SSRF guard shared by every outbound
// connection Baton makes on behalf of a client: the pages and sub-resources
// Chromium loads for PDF tasks, signed callbacks (webhooks), dry-run probes
// and outside data providers.
//
// # Threat model
//
// Clients choose URLs (the page to render, its sub-resources, its redirects,
// the callback URL). Without a guard, a client can make Baton fetch
// http://169.254.169.254/ (cloud metadata and credentials), the admin API on
// 127.0.0.1:8080, Chromium's own DevTools port (which is remote code
// execution), Redis or MariaDB on the private network, or file:///etc/passwd,
// and read the answer back in the PDF or in a callback. Gotenberg, the closest
// project to Baton's PDF service, shipped that hole in every form: its
// default configuration renders its own http://127.0.0.1:<port>/health, and
// its CVEs came through redirects from an allowed page, through webhook URLs,
// and through file:// URLs.
//
// Checking the URL string before fetching is not enough:
//
//   - A public name may resolve to a private address, and DNS rebinding makes
//     the answer change between the check and the connection (a short TTL,
//     first answer public, second private).
//   - A redirect, a sub-resource, an iframe or a script's fetch() chooses new
//     destinations after the check, inside the browser.
//   - The same address has many spellings: 2130706433, 0x7f.1, 017700000001,
//     127.1, full-width digits, ::ffff:127.0.0.1, 64:ff9b::7f00:1, 2002:7f00:1::.
//
// So the decision is made where the connection is made, against the address
// actually being connected to: DialContext resolves a name once, judges
// every answer with CheckIP and dials the judged IP literally (no second
// lookup to rebind), and the net.Dialer Control hook judges the socket's
// destination again just before connect(2). A refused address never gets a
// packet. CheckURL remains useful up front (scheme, userinfo, IP literals,
// clear client errors, the dry run's ssrfBlocked) but it is not the guard.
//
// # What is refused
//
// Everything not globally reachable: loopback, RFC 1918 and unique-local
// private ranges, link-local (including the metadata addresses
// 169.254.169.254, 169.254.170.2, fd00:ec2::254, 100.100.100.200,
// 192.0.0.192), CGNAT, multicast, broadcast, unspecified, 0/8, 240/4,
// benchmarking and documentation ranges, deprecated and special IPv6 ranges
// (IPv4-compatible, site-local, Teredo, 2001::/23, local-use NAT64,
// everything outside 2000::/3), and IPv4 addresses in IPv6 clothing
// (IPv4-mapped, NAT64 64:ff9b::/96 and 6to4 2002::/16 are judged by the IPv4
// address they carry). The operator's allow-list (--egress-allow CIDR,...)
// overrides all of these except the unspecified address. Schemes other than
// http and https (ws/wss and about:blank only where a caller opts in) are
// refused, as are URLs with userinfo.
//
// # What a caller must do
//
// Outbound HTTP from Go (callbacks, providers, probes): use
// Policy.HTTPClient, or set Policy.DialContext as the DialContext of your
// own http.Transport with Proxy nil and a CheckRedirect that calls CheckURL.
// Never use http.DefaultClient or a transport that reads proxy settings from
// the environment. Check client input with CheckURL first for a clear error,
// and fetch the URL it returns (its host is normalized), not the raw string.
//
// Chromium: start one Proxy (NewProxy, Start on 127.0.0.1:0) and launch every
// browser with
//
//	--proxy-server=http://127.0.0.1:PORT
//	--proxy-bypass-list=<-loopback>
//
// The special token <-loopback> removes Chromium's implicit bypass of
// localhost, 127.0.0.0/8 and [::1]; without it a page reaches loopback
// services (Baton's API, DevTools) directly, around the proxy. Also pass
// --disable-quic (QUIC does not use the proxy),
// --force-webrtc-ip-handling-policy=disable_non_proxied_udp or the
// WebRtcIPHandling policy with that value (WebRTC would send UDP around it)
// and --dns-prefetch-disable. Chromium does not resolve
// names itself when a proxy is set; the proxy does, through the policy.
//
// For each task: register a Session (Proxy.Session(taskID)), create a fresh
// browser context for the task (Target.createBrowserContext; it may also
// carry proxyServer), and answer the proxy's 407 challenge with user name =
// task ID, any password: enable Fetch with handleAuthRequests and reply to
// Fetch.authRequired (source Proxy) with Fetch.continueWithAuth. Chromium
// ignores credentials written in --proxy-server and caches proxy credentials
// per browser context, which is why each task needs its own context for the
// refusals to be attributed to it. Check the page URL with CheckURL before
// navigating (a refused page fails the task with a clear error); when the
// task ends, Proxy.EndSession returns the dropped sub-resources to report.
//
// Chromium loads some URLs without the network stack: file:, chrome:,
// devtools: and the like. Block them in the browser as well (for example
// Fetch or Network.setBlockedURLs patterns) and never render with
// --allow-file-access-from-files; the proxy only sees what goes to the
// network. data: and blob: sub-resources stay inside the page and are
// harmless.
package egress
