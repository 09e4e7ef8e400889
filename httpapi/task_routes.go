package httpapi

import (
	"net/http"

	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/queue"
)

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	var spec controller.TaskSpec
	if err := decodeJSON(w, r, 2*controller.MaxPayloadBytes, &spec); err != nil {
		return err
	}
	out, err := s.c.CreateTasks(r.Context(), []controller.TaskSpec{spec})
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !out[0].Created {
		status = http.StatusOK
	}
	writeJSON(w, status, out[0])
	return nil
}

// TaskBatch is the body of POST /api/tasks/batch.
type TaskBatch struct {
	Tasks []controller.TaskSpec `json:"tasks"`
}

// TaskBatchResponse answers POST /api/tasks/batch.
type TaskBatchResponse struct {
	Tasks []controller.Created `json:"tasks"`
}

func (s *Server) createTasks(w http.ResponseWriter, r *http.Request) error {
	var b TaskBatch
	if err := decodeJSON(w, r, BatchBodyLimit, &b); err != nil {
		return err
	}
	out, err := s.c.CreateTasks(r.Context(), b.Tasks)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, TaskBatchResponse{Tasks: out})
	return nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	t, err := s.c.Task(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	st, err := s.c.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"taskId": r.PathValue("id"), "status": st})
	return nil
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.c.Queues(r.Context())
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []queue.QueueStat{}
	}
	writeJSON(w, http.StatusOK, qs)
	return nil
}

func (s *Server) putQueue(w http.ResponseWriter, r *http.Request) error {
	var cfg queue.QueueConfig
	if err := decodeJSON(w, r, DefaultBodyLimit, &cfg); err != nil {
		return err
	}
	if err := s.c.SetQueue(r.Context(), r.PathValue("name"), cfg); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cfg)
	return nil
}

func (s *Server) pauseQueue(paused bool) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		cfg, err := s.c.PauseQueue(r.Context(), r.PathValue("name"), paused)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": r.PathValue("name"), "paused": cfg.Paused, "ratePerMin": cfg.RatePerMin})
		return nil
	}
}

func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.c.Workers(r.Context())
	if err != nil {
		return err
	}
	if ws == nil {
		ws = []queue.WorkerInfo{}
	}
	writeJSON(w, http.StatusOK, ws)
	return nil
}
