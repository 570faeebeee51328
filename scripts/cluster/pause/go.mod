module example.invalid/pause

go 1.24.0
