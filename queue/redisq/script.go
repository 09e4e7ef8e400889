package redisq

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// lib holds the Lua helpers every state-changing script starts with.
//
//go:embed lib.lua
var lib string

// newScript builds a script from the shared helpers and a script body. The
// script runs with EVALSHA and falls back to EVAL the first time a server
// has not seen it.
func newScript(body string) *redis.Script {
	return redis.NewScript(lib + "\n" + body)
}
