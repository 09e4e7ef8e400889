// Package httpcheck is a configurable HTTP check for providers without a
// public API (jucha, juzi): an operator with access wires one up from
// configuration alone — endpoint, GET or POST, headers and body templates
// with {{domain}} / {{secret}}, a cookie, and extraction rules — and the
// same word-list rules as the other steps decide.
//
// It also holds the small extraction languages the checks share, each
// written for outside input and fuzzed:
//
//   - Path: dotted paths ("data.history[*].bt", `a["k.with.dots"]`, "[-1]")
//     or JSON pointers ("/Result/BaiduPcWeight") over decoded JSON;
//   - Selector: a CSS subset (tag, .class, #id, [attr], [attr=v],
//     [attr*=v], descendant and child combinators, ",", "@attr") over HTML;
//   - Extractor: one of a Path, a Selector or a regexp;
//   - Int: lenient integers ("1,234", "建站5年").
//
// Secrets (Config.Secret, Config.Cookie) are check.Secret values: they are
// redacted from every URL, body excerpt, error and reason kept as evidence.
// An answer that needs the operator (no endpoint, a login page, extractors
// that find nothing) retries with an alert {"code":"<step>_config"} or
// {"code":"<step>_auth"} in the verdict's data.
package httpcheck
