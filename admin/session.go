package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// Cookie names.
const (
	sessionCookie = "baton_session"
	loginCookie   = "baton_login" // pre-session CSRF token of the sign-in form
	langCookie    = "baton_lang"
)

// session is one signed-in browser.
type session struct {
	id       string
	csrf     string
	created  time.Time
	lastSeen time.Time
	flash    string // a catalogue key shown once on the next page
	flashArg string
}

// sessions is the server-side session map.
type sessions struct {
	idle, max time.Duration
	now       func() time.Time

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(idle, max time.Duration, now func() time.Time) *sessions {
	return &sessions{idle: idle, max: max, now: now, m: map[string]*session{}}
}

// randomToken returns 256 random bits, hex-encoded.
func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// equal compares two secrets in constant time, also across lengths.
func equal(got, want string) bool {
	if want == "" {
		return false
	}
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// create starts a session, sweeping expired ones.
func (s *sessions) create() *session {
	now := s.now()
	ss := &session{id: randomToken(), csrf: randomToken(), created: now, lastSeen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, o := range s.m {
		if s.expired(o, now) {
			delete(s.m, id)
		}
	}
	s.m[ss.id] = ss
	return ss
}

func (s *sessions) expired(ss *session, now time.Time) bool {
	return now.Sub(ss.lastSeen) > s.idle || now.Sub(ss.created) > s.max
}

// get returns the live session of id and marks it used; nil when there is
// none or it expired.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return nil
	}
	if s.expired(ss, now) {
		delete(s.m, id)
		return nil
	}
	ss.lastSeen = now
	return ss
}

// drop ends a session.
func (s *sessions) drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// setFlash stores a message for the session's next page.
func (s *sessions) setFlash(ss *session, key, arg string) {
	s.mu.Lock()
	ss.flash, ss.flashArg = key, arg
	s.mu.Unlock()
}

// takeFlash returns and clears the session's message.
func (s *sessions) takeFlash(ss *session) (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, a := ss.flash, ss.flashArg
	ss.flash, ss.flashArg = "", ""
	return k, a
}

// cookie builds one of the UI's cookies.
func (u *UI) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: u.cfg.SecureCookies || r.TLS != nil,
	}
}

// session returns the request's live session, or nil.
func (u *UI) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return u.sess.get(c.Value)
}
