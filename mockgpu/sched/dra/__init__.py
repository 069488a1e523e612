"""Dynamic Resource Allocation in the pure scheduling core: CEL selectors, pools, the allocator, the snapshot."""
