package app

import "github.com/batonhq/baton/admin"

// openUI mounts the admin web UI at / (sign in with the admin token).
func (a *App) openUI() error {
	ui, err := admin.Mount(a.API, admin.Config{
		Controller: a.Ctrl, Pipeline: a.Pipeline, DB: a.DB, Metrics: a.Registry, Logger: a.log, PDF: a.PDFAdmin(),
	})
	if err != nil {
		return err
	}
	a.UI = ui
	return nil
}
