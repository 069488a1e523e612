module mockgpu.local/tools/pause

go 1.22
