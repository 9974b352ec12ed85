module gpulet.dev/test/strict/goskip

go 1.26.0
