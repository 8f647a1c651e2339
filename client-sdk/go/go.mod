module fencelock.dev/fencelock

go 1.19
