package juzi

import (
	"net/http"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
	"github.com/batonhq/baton/check/wordlist"
)

// Step is the pipeline step name of this checker.
const Step = "juzi"

// Config configures the juzi adapter; see httpcheck.Config for every field.
// Zero fields take Defaults().
type Config = httpcheck.Config

// Defaults returns the default configuration: the sandbox's SIMULATED page
// (see the package doc), no endpoint and no cookie.
func Defaults() Config {
	return Config{
		Method:   http.MethodGet,
		Query:    map[string]string{"domain": httpcheck.PlaceholderDomain},
		Format:   httpcheck.FormatHTML,
		Titles:   httpcheck.Extractor{CSS: "ul.jz-titles li"},
		Texts:    map[string]httpcheck.Extractor{"grey": {CSS: "td[data-field=grey]"}},
		Years:    httpcheck.Extractor{CSS: "td[data-field=age]"},
		Flags:    map[string]httpcheck.Extractor{"blocked": {CSS: "td[data-field=blocked]"}},
		Captcha:  []string{`请输入验证码`, `(?i)<title>[^<]*安全验证`, `jz-captcha`},
		Login:    []string{`(?i)<title>[^<]*登录`, `jz-login`, `(?i)type=["']?password`},
		LoginURL: []string{`/login([/?#]|$)`},
	}
}

// New returns the juzi checker for cfg merged over Defaults(), scanning
// titles and texts with words (nil = the embedded default lists). It does no I/O.
func New(cfg Config, env check.Env, words *wordlist.Store) (*httpcheck.Checker, error) {
	return httpcheck.New(Step, cfg.Merge(Defaults()), env, words)
}

// Validate reports errors in cfg merged over Defaults().
func Validate(cfg Config) error { return cfg.Merge(Defaults()).Validate() }
