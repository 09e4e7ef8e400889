// Package admin is Baton's operator web UI (后台), SPEC §7: sign-in with the
// admin token, the domain pipeline's steps as check boxes with their
// settings, queues and workers live, the domain funnel and throughput
// charts, domain import, search and detail with evidence, and the PDF
// service's tasks, callback log and replay, and API keys — in Chinese and
// English.
//
// The UI is server-rendered (html/template) with its templates and assets
// embedded in the binary; it loads nothing from outside (no CDN) and uses
// one small script, only to refresh the dashboard. Charts are SVG drawn on
// the server.
//
// # Mounting
//
// admin does not import the app package, so that app may import admin.
// Wire it where the parts are assembled:
//
//	ui, err := admin.Mount(a.API, admin.Config{
//		Controller: a.Ctrl, Pipeline: a.Pipeline, DB: a.DB,
//		Metrics: a.Registry, PDF: pdfBackend, Logger: logger,
//	})
//	...
//	defer ui.Close()
//
// Mount adds GET / (a redirect) and everything under /ui/ to the API
// server through its HandleRaw; the UI does its own authentication.
//
// # Security
//
// Sessions: a random 256-bit id in an HttpOnly, SameSite=Lax cookie (Secure
// on TLS requests, or always with Config.SecureCookies), held in a
// server-side map with an idle and an absolute expiry. Every POST carries a
// per-session CSRF token in a hidden field, compared in constant time, and
// a cross-origin Origin header is refused; the sign-in form is protected
// the same way with a pre-session cookie. Bodies are bounded; pages are
// html/template (contextual escaping); errors show a safe message, never a
// stack trace; a Content-Security-Policy allows only the UI's own assets.
package admin
