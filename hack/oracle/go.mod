module kumaco.test/oracle

go 1.26.0

require github.com/robfig/cron/v3 v3.0.1

require (
	golang.org/x/net v0.61.0
	golang.org/x/text v0.43.0 // indirect
)
