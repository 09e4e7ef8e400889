// Package all builds every domain-pipeline checker from one configuration,
// in the canonical step order (register, baidu, chinaz, aizhan, wayback,
// jucha, juzi), and points them all at the sandbox for `--sandbox`.
package all

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton/check"
	"github.com/batonhq/baton/check/aizhan"
	"github.com/batonhq/baton/check/baidu"
	"github.com/batonhq/baton/check/chinaz"
	"github.com/batonhq/baton/check/jucha"
	"github.com/batonhq/baton/check/juzi"
	"github.com/batonhq/baton/check/register"
	"github.com/batonhq/baton/check/wayback"
	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/sandbox"
)

// Config bundles each step's configuration; zero fields take each
// package's defaults.
type Config struct {
	Register register.Config `json:"register"`
	Baidu    baidu.Config    `json:"baidu"`
	Chinaz   chinaz.Config   `json:"chinaz"`
	Aizhan   aizhan.Config   `json:"aizhan"`
	Wayback  wayback.Config  `json:"wayback"`
	Jucha    jucha.Config    `json:"jucha"`
	Juzi     juzi.Config     `json:"juzi"`
}

// New builds the seven checkers in canonical step order. words are the
// word lists the scanning steps share (nil = the embedded defaults). The
// aizhan checker is also a check.BatchChecker. New does no I/O.
func New(cfg Config, env check.Env, words *wordlist.Store) ([]check.Checker, error) {
	reg, err := register.New(cfg.Register, env)
	if err != nil {
		return nil, fmt.Errorf("register check: %w", err)
	}
	bd, err := baidu.New(cfg.Baidu, env, words)
	if err != nil {
		return nil, fmt.Errorf("baidu check: %w", err)
	}
	cz, err := chinaz.New(cfg.Chinaz, env)
	if err != nil {
		return nil, fmt.Errorf("chinaz check: %w", err)
	}
	az, err := aizhan.New(cfg.Aizhan, env)
	if err != nil {
		return nil, fmt.Errorf("aizhan check: %w", err)
	}
	wb, err := wayback.New(cfg.Wayback, env, words)
	if err != nil {
		return nil, fmt.Errorf("wayback check: %w", err)
	}
	jc, err := jucha.New(cfg.Jucha, env, words)
	if err != nil {
		return nil, fmt.Errorf("jucha check: %w", err)
	}
	jz, err := juzi.New(cfg.Juzi, env, words)
	if err != nil {
		return nil, fmt.Errorf("juzi check: %w", err)
	}
	return []check.Checker{reg, bd, cz, az, wb, jc, jz}, nil
}

// SandboxChinazAPI is the chinaz API path used against the sandbox (which
// accepts any).
const SandboxChinazAPI = "baiduweight"

// SandboxConfig points every checker at the sandbox endpoints ep, with the
// credentials the sandbox accepts. Timeouts are left at their defaults; set
// them on the result (the sandbox holds "timeout" requests for its Hang).
func SandboxConfig(ep sandbox.Endpoints) Config {
	var cfg Config
	cfg.Register.BootstrapURL = ep.RDAPBootstrap
	cfg.Register.WHOISServers = ep.WHOISServers
	cfg.Baidu.BaseURL = ep.Baidu
	// The sandbox redirects its captcha to its own host, not wappass.baidu.com;
	// the page markers catch it.
	cfg.Chinaz.BaseURL = ep.Chinaz
	cfg.Chinaz.API = SandboxChinazAPI
	cfg.Chinaz.Key = check.Secret(ep.ChinazKey)
	cfg.Aizhan.BaseURL = ep.Aizhan
	cfg.Aizhan.Key = check.Secret(ep.AizhanKey)
	cfg.Wayback.BaseURL = ep.Wayback
	cfg.Jucha.Endpoint = strings.TrimSuffix(ep.Jucha, "/") + "/item/search"
	cfg.Juzi.Endpoint = strings.TrimSuffix(ep.Juzi, "/") + "/domain"
	cfg.Juzi.Cookie = check.Secret("juzi_session=" + url.QueryEscape(ep.JuziCookie))
	return cfg
}

// WithTimeout returns cfg with every step's request timeout set to d.
func (cfg Config) WithTimeout(d time.Duration) Config {
	cfg.Register.Timeout, cfg.Register.WHOISTimeout = d, d
	cfg.Baidu.Timeout = d
	cfg.Chinaz.Timeout = d
	cfg.Aizhan.Timeout = d
	cfg.Wayback.Timeout = d
	cfg.Jucha.Timeout = d
	cfg.Juzi.Timeout = d
	return cfg
}
