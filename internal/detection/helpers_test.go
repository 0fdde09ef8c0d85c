package detection

import (
	"math"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var approx = cmp.Options{cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateNaNs()}

func nanValue() float64 { return math.NaN() }
