# Numbers a compiled document cannot hold exactly are refused where they are written.
model "m" {
  provider = "scripted"
  model    = "scripted-small"
  parameters = {
    big     = 1e400
    small   = -1e400
    digits  = 123456789012345678901234567890
    largest = 9007199254740991
    tiny    = 1e-400
    minus   = -2.5e-999
    zero    = 0.0e-999
    least   = 5e-324
  }
}
