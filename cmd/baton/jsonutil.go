package main

import (
	"encoding/json"
	"io"
)

func jsonDecodeInto(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
