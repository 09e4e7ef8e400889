package jucha

import (
	"net/http"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/httpcheck"
	"github.com/batonhq/baton/check/wordlist"
)

// Step is the pipeline step name of this checker.
const Step = "jucha"

// Config configures the jucha adapter; see httpcheck.Config for every
// field. Zero fields take Defaults().
type Config = httpcheck.Config

// Defaults returns the default configuration: the sandbox's SIMULATED
// answer shape (see the package doc), no endpoint.
func Defaults() Config {
	return Config{
		Method:     http.MethodPost,
		Body:       "domain=" + httpcheck.PlaceholderDomain,
		BodyType:   httpcheck.BodyForm,
		Format:     httpcheck.FormatJSON,
		OK:         httpcheck.Extractor{JSON: "code"},
		OKValues:   []string{"1"},
		Message:    httpcheck.Extractor{JSON: "msg"},
		Titles:     httpcheck.Extractor{JSON: "data.history[*].bt"},
		TitleTimes: httpcheck.Extractor{JSON: "data.history[*].ts"},
		Years:      httpcheck.Extractor{JSON: "data.nianshu"},
		Captcha:    []string{`"captcha"\s*:\s*true`, `滑块验证`, `请完成验证`},
		Login:      []string{`请先登录`, `"login"\s*:\s*true`, `(?i)<title>[^<]*登录`},
		LoginURL:   []string{`/login([/?#]|$)`, `/passport/`},
	}
}

// New returns the jucha checker for cfg merged over Defaults(), scanning
// titles with words (nil = the embedded default lists). It does no I/O.
func New(cfg Config, env check.Env, words *wordlist.Store) (*httpcheck.Checker, error) {
	return httpcheck.New(Step, cfg.Merge(Defaults()), env, words)
}

// Validate reports errors in cfg merged over Defaults().
func Validate(cfg Config) error { return cfg.Merge(Defaults()).Validate() }
