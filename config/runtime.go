package config

// checkRuntimeAgainstDistribution is filled in with the lock-overlay work.
func (k *checker) checkRuntimeAgainstDistribution(c *Community) {}
