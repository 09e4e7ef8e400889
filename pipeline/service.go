package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/check/wordlist"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue"
)

// Service is the domain pipeline inside a controller: configuration, stage
// processor, dispatcher and syncer.
type Service struct {
	db         *ledger.DB
	ctrl       *controller.Controller
	cfg        *ConfigHolder
	dispatcher *Dispatcher
	syncer     *Syncer
	alerts     *Alerts
	log        *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Options tunes the service.
type Options struct {
	Dispatcher DispatcherConfig
	// NoDispatchLoop disables the timed scans (scans then run only on
	// POST /api/pipeline/scan); for tests and benchmarks.
	NoDispatchLoop bool
	// ConfigReload is how often the configuration is re-read from the
	// main DB, to see another controller's changes; default 10s.
	ConfigReload time.Duration
	// Defaults is the configuration used until an operator saves one;
	// default DefaultConfig.
	Defaults func() Config
	// Words receives the configured word lists; the checks read it.
	Words  *wordlist.Store
	Logger *slog.Logger
}

// NewService loads the configuration and registers the stage processor
// with the controller and the syncer with the outbox relay.
func NewService(ctx context.Context, db *ledger.DB, ctrl *controller.Controller, relay *controller.Relay, opt Options) (*Service, error) {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	holder, err := NewConfigHolder(ctx, db, ctrl, opt.Defaults, opt.Words)
	if err != nil {
		return nil, err
	}
	s := &Service{
		db: db, ctrl: ctrl, cfg: holder, log: opt.Logger.With("component", "pipeline"),
		dispatcher: NewDispatcher(db, ctrl, holder, opt.Dispatcher, opt.Logger),
		syncer:     NewSyncer(db, opt.Logger),
		alerts:     NewAlerts(),
	}
	proc := NewProcessor(holder, ctrl.Now)
	proc.alerts = s.alerts
	ctrl.Handle("domain.", proc)
	relay.Handle(OutboxKind, s.syncer.HandleEvents)
	relay.Handle(queue.OutboxKindTaskFinal, s.syncer.HandleTaskFinal)
	if opt.ConfigReload <= 0 {
		opt.ConfigReload = 10 * time.Second
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if !opt.NoDispatchLoop {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.dispatcher.Run(runCtx) }()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(opt.ConfigReload)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				if err := holder.Reload(runCtx); err != nil && runCtx.Err() == nil {
					s.log.Warn("reload configuration", "err", err)
				}
			}
		}
	}()
	return s, nil
}

// Config returns the configuration holder.
func (s *Service) Config() *ConfigHolder { return s.cfg }

// Alerts returns the open operator alerts.
func (s *Service) Alerts() *Alerts { return s.alerts }

// Dispatcher returns the dispatcher.
func (s *Service) Dispatcher() *Dispatcher { return s.dispatcher }

// Stop ends the background loops; safe twice.
func (s *Service) Stop() {
	s.once.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
}
