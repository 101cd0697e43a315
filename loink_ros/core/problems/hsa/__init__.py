"""The planar soft robot of handed-shearing-auxetic segments (paper Table II): its
parameters, jsrm's statics in CasADi, least effort and the problem."""
