package httpapi

import (
	"net/http"

	baton "github.com/batonhq/baton"
)

func (s *Server) claim(w http.ResponseWriter, r *http.Request) error {
	var req baton.ClaimRequest
	if err := decodeJSON(w, r, DefaultBodyLimit, &req); err != nil {
		return err
	}
	tasks, err := s.c.Claim(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, baton.ClaimResponse{Tasks: tasks})
	return nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	var req baton.HeartbeatRequest
	if err := decodeJSON(w, r, DefaultBodyLimit, &req); err != nil {
		return err
	}
	exp, err := s.c.Heartbeat(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, baton.HeartbeatResponse{LeaseExpiresAt: exp})
	return nil
}

func (s *Server) result(w http.ResponseWriter, r *http.Request) error {
	var res baton.Result
	if err := decodeJSON(w, r, BatchBodyLimit, &res); err != nil {
		return err
	}
	if err := s.c.Result(r.Context(), r.PathValue("id"), res); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	var req baton.ReleaseRequest
	if err := decodeJSON(w, r, DefaultBodyLimit, &req); err != nil {
		return err
	}
	if err := s.c.Release(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (s *Server) results(w http.ResponseWriter, r *http.Request) error {
	var req baton.ResultsRequest
	if err := decodeJSON(w, r, BatchBodyLimit, &req); err != nil {
		return err
	}
	if req.Results == nil {
		return baton.Errorf(baton.EInvalid, "results is required")
	}
	resp, err := s.c.Results(r.Context(), req.Results)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// artifact stores an upload for a task whose lease the caller holds. The
// lease is checked (and extended) first; the file is content-addressed, so
// a worker that loses its lease mid-upload cannot replace anything.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) error {
	if s.arts == nil {
		return baton.Errorf(baton.ENotFound, "artifact uploads are not enabled")
	}
	id := r.PathValue("id")
	tok := r.Header.Get("X-Lease-Token")
	if tok == "" {
		return baton.Errorf(baton.EInvalid, "header X-Lease-Token is required")
	}
	if limit := s.arts.MaxSize(); r.ContentLength > limit {
		return baton.Errorf(baton.ETooLarge, "artifact larger than %d bytes", limit)
	}
	if _, err := s.c.Heartbeat(r.Context(), id, baton.HeartbeatRequest{LeaseToken: tok}); err != nil {
		return err
	}
	info, err := s.arts.Put(r.Context(), id, http.MaxBytesReader(w, r.Body, s.arts.MaxSize()+1))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}
