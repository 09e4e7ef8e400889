package admin

import (
	"net/http"
	"strconv"
	"strings"
)

// catalogue holds every UI string: key → {Chinese, English}. Keys used by
// the templates are checked against it by TestCatalogueCoversTemplates.
var catalogue = map[string][2]string{
	"adminUI":    {"后台", "admin"},
	"switchLang": {"English", "中文"},
	"signIn":     {"登录", "Sign in"},
	"signInHelp": {"请输入管理员令牌（启动时打印，或见数据目录中的 admin.token）。",
		"Enter the admin token (printed at start, or in admin.token in the data directory)."},
	"adminToken":   {"管理员令牌", "Admin token"},
	"loginWrong":   {"令牌不正确。", "That token is not right."},
	"loginExpired": {"登录表单已过期，请重试。", "The sign-in form expired; please try again."},
	"signOut":      {"退出", "Sign out"},
	"errorTitle":   {"出错了", "Something went wrong"},
	"backHome":     {"返回概览", "Back to the dashboard"},

	"dashboard":      {"概览", "Dashboard"},
	"pipeline":       {"检测流程", "Pipeline"},
	"domains":        {"域名", "Domains"},
	"domain":         {"域名", "Domain"},
	"pdfTasks":       {"PDF 任务", "PDF tasks"},
	"pdfTask":        {"PDF 任务", "PDF task"},
	"apiKeys":        {"API 密钥", "API keys"},
	"error":          {"错误", "Error"},
	"queues":         {"队列", "Queues"},
	"queue":          {"队列", "Queue"},
	"ready":          {"待领取", "Ready"},
	"running":        {"处理中", "Processing"},
	"retry":          {"待重试", "Retry"},
	"dead":           {"失败", "Dead"},
	"oldest":         {"最久等待", "Oldest"},
	"ratePerMin":     {"每分钟限速", "Rate / min"},
	"state":          {"状态", "State"},
	"paused":         {"已暂停", "paused"},
	"active":         {"运行中", "active"},
	"pause":          {"暂停", "Pause"},
	"resume":         {"恢复", "Resume"},
	"noQueues":       {"还没有队列。", "No queues yet."},
	"funnel":         {"域名漏斗", "Domain funnel"},
	"funnelHelp":     {"已启用的各步骤：到达数及其结果（每个域名取最新结果）。", "Each enabled step: domains that reached it and how they left it (latest result per domain)."},
	"reached":        {"到达", "reached"},
	"passed":         {"通过", "passed"},
	"rejected":       {"拒绝", "rejected"},
	"blackHit":       {"命中黑名单", "black hit"},
	"failed":         {"失败", "failed"},
	"inProgress":     {"进行中", "in progress"},
	"noStepsEnabled": {"没有启用的步骤。", "No step is enabled."},
	"throughput":     {"最近一小时吞吐", "Throughput, last hour"},
	"throughputHelp": {"本控制器每分钟接受的任务结果数（所有类型与结果，含重试；指标 baton_task_outcomes_total 的增量）。",
		"Task results this controller accepted per minute (every type and outcome, retries included: the increase of baton_task_outcomes_total)."},
	"peak":      {"峰值", "peak"},
	"total":     {"合计", "total"},
	"now":       {"现在", "now"},
	"workers":   {"工作节点", "Workers"},
	"worker":    {"工作节点", "Worker"},
	"lastSeen":  {"最近心跳", "Last seen"},
	"ago":       {"前", "ago"},
	"tasksHeld": {"持有任务", "Tasks held"},
	"types":     {"任务类型", "Types"},
	"allTypes":  {"全部", "all"},
	"noWorkers": {"最近 24 小时没有工作节点。", "No worker seen in the last 24 hours."},
	"updatedAt": {"更新于", "Updated"},

	"pipelineHelp":   {"勾选要运行的检测，按顺序执行。保存后，每个域名的下一步即按新设置执行。", "Tick the checks to run; they run in this order. A save applies to the next step every domain takes."},
	"version":        {"版本", "version"},
	"savedAt":        {"保存于", "saved"},
	"notSaved":       {"未保存：", "Not saved:"},
	"configConflict": {"配置已被他人修改，请刷新后重试", "Someone else saved the configuration meanwhile; reload and try again"},
	"settings":       {"设置", "Settings"},
	"maxAttempts":    {"最大尝试次数", "Max attempts"},
	"leaseTtlMs":     {"租约时长（毫秒）", "Lease TTL (ms)"},
	"onReject":       {"拒绝时", "On reject"},
	"onRejectStop":   {"停止（判定拒绝）", "stop (rejected)"},
	"onRejectReview": {"转人工复核", "park for review"},
	"ruleParams":     {"规则参数", "Rule parameters"},
	"ruleParamsHelp": {"每行一个：名称 = 数值", "one per line: name = number"},
	"decideRule":     {"判定表达式（decide）", "Decide rule"},
	"decideHelp":     {"可选，expr 语言；返回 pass / reject / black_hit / retry 或空串", "optional, expr language; returns pass, reject, black_hit, retry or \"\""},
	"save":           {"保存", "Save"},
	"saveHelp":       {"保存前会完整校验；有错误时不会保存任何内容。", "Everything is validated first; on an error nothing is saved."},
	"scanNow":        {"立即扫描", "Scan now"},
	"scanHelp":       {"立即运行一次调度扫描，把待检域名放入队列。", "Run the dispatcher once now: queue the domains that have work."},

	"search":         {"搜索", "Search"},
	"namePrefix":     {"域名前缀", "Name prefix"},
	"status":         {"状态", "Status"},
	"step":           {"步骤", "Step"},
	"any":            {"全部", "any"},
	"import":         {"导入", "Import"},
	"pasteDomains":   {"粘贴域名", "Paste domains"},
	"importHelp":     {"每行一个，或 CSV：名称,删除时间[,来源]", "one per line, or CSV name,delete_at[,source]"},
	"orUpload":       {"或上传文件", "or upload a file"},
	"importResult":   {"导入结果", "Import result"},
	"added":          {"新增", "added"},
	"duplicates":     {"重复", "duplicates"},
	"invalidLines":   {"无效行", "invalid lines"},
	"invalidMore":    {"只列出前 %d 行。", "Only the first %d are listed."},
	"line":           {"行号", "Line"},
	"content":        {"内容", "Content"},
	"reason":         {"原因", "Reason"},
	"deleteAt":       {"删除时间", "Deletes at"},
	"source":         {"来源", "Source"},
	"updated":        {"更新", "Updated"},
	"created":        {"创建", "Created"},
	"noDomains":      {"没有符合条件的域名。", "No domain matches."},
	"nextPage":       {"下一页", "Next page"},
	"blacklisted":    {"黑名单", "blacklisted"},
	"steps":          {"检测步骤", "Steps"},
	"disabled":       {"未启用", "disabled"},
	"notRun":         {"未运行", "not run"},
	"attempts":       {"尝试次数", "Attempts"},
	"finished":       {"完成", "Finished"},
	"started":        {"开始", "Started"},
	"task":           {"任务", "Task"},
	"wordHits":       {"命中词", "Words hit"},
	"black":          {"黑词", "black"},
	"signal":         {"信号词", "signal"},
	"snapshots":      {"抽样快照（时光机）", "Sampled snapshots (Wayback)"},
	"evidence":       {"证据（JSON）", "Evidence (JSON)"},
	"runs":           {"运行历史", "Run history"},
	"run":            {"运行", "Run"},
	"stoppedAt":      {"停止于", "Stopped at"},
	"noRuns":         {"还没有运行。", "No run yet."},
	"st_pending":     {"待检", "pending"},
	"st_running":     {"检测中", "running"},
	"st_passed":      {"通过", "passed"},
	"st_rejected":    {"拒绝", "rejected"},
	"st_review":      {"待复核", "review"},
	"st_blacklisted": {"黑名单", "blacklisted"},
	"st_failed":      {"失败", "failed"},
	"oc_pass":        {"通过", "pass"},
	"oc_reject":      {"拒绝", "reject"},
	"oc_black_hit":   {"命中黑名单", "black hit"},
	"oc_retry":       {"重试", "retry"},

	"pdfOffline":        {"PDF 服务尚未接入本控制器。", "The PDF service is not connected to this controller yet."},
	"taskIdPrefix":      {"任务 ID 前缀", "Task ID prefix"},
	"filter":            {"筛选", "Filter"},
	"sourceDoc":         {"源", "Source"},
	"client":            {"客户端", "Client"},
	"noTasks":           {"没有任务。", "No task."},
	"callbackUrl":       {"回调地址", "Callback URL"},
	"result":            {"结果", "Result"},
	"download":          {"下载 PDF", "Download PDF"},
	"timings":           {"耗时", "Timings"},
	"queueWait":         {"排队", "Queue wait"},
	"renderTime":        {"渲染", "Render"},
	"totalTime":         {"总计", "Total"},
	"options":           {"转换选项", "Options"},
	"defaults":          {"全部为默认值。", "All defaults."},
	"callbackLog":       {"回调日志", "Callback log"},
	"sent":              {"发送时间", "Sent"},
	"duration":          {"耗时", "Duration"},
	"bodies":            {"请求/响应", "Bodies"},
	"show":              {"查看", "show"},
	"replay":            {"重放", "replay"},
	"noCallbacks":       {"还没有回调。", "No callback yet."},
	"backoffMultiplier": {"退避倍数", "Backoff multiplier"},
	"replayCallback":    {"重放回调", "Replay callback"},
	"keyCreated":        {"已创建密钥", "Key created"},
	"shownOnce":         {"请立即复制：密钥与回调签名密钥只显示这一次。", "Copy them now: the key and its callback secret are shown this once only."},
	"name":              {"名称", "Name"},
	"apiKey":            {"API 密钥", "API key"},
	"callbackSecret":    {"回调签名密钥", "Callback secret"},
	"createKey":         {"创建密钥", "Create a key"},
	"create":            {"创建", "Create"},
	"valid":             {"有效", "valid"},
	"revoked":           {"已吊销", "revoked"},
	"revoke":            {"吊销", "Revoke"},
	"noKeys":            {"还没有密钥。", "No key yet."},

	"flashSaved":        {"已保存（版本 %s）。", "Saved (version %s)."},
	"flashScanned":      {"扫描完成：新入队 %s 个域名。", "Scan done: %s domains queued."},
	"flashPaused":       {"队列 %s 已暂停。", "Queue %s paused."},
	"flashResumed":      {"队列 %s 已恢复。", "Queue %s resumed."},
	"flashReplayOK":     {"回调已重放：HTTP %s。", "Callback replayed: HTTP %s."},
	"flashReplayFailed": {"回调重放失败：%s", "Callback replay failed: %s"},
	"flashRevoked":      {"密钥 %s 已吊销。", "Key %s revoked."},
}

// tr returns key in lang; an unknown key shows as itself (a test keeps the
// catalogue complete).
func tr(lang, key string) string {
	m, ok := catalogue[key]
	if !ok {
		return key
	}
	if lang == "zh" {
		return m[0]
	}
	return m[1]
}

// pickLang chooses zh or en: the cookie set by the switch, else the first
// of the two that Accept-Language ranks highest, else English.
func pickLang(r *http.Request) string {
	if c, err := r.Cookie(langCookie); err == nil && (c.Value == "zh" || c.Value == "en") {
		return c.Value
	}
	best, bestQ := "en", -1.0
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if (base == "zh" || base == "en") && q > bestQ {
			best, bestQ = base, q
		}
	}
	return best
}

func otherLang(l string) string {
	if l == "zh" {
		return "en"
	}
	return "zh"
}
