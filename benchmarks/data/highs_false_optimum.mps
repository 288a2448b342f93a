NAME        
ROWS
 N  Obj     
 E  r0      
 E  r1      
 L  r2      
 L  r3      
 L  r4      
 E  r5      
 E  r6      
 E  r7      
 E  r8      
 E  r9      
 E  r10     
 L  r11     
 L  r12     
 L  r13     
 L  r14     
 L  r15     
 L  r16     
 L  r17     
 L  r18     
 L  r19     
 L  r20     
 L  r21     
 L  r22     
 L  r23     
 L  r24     
 L  r25     
 L  r26     
 L  r27     
 L  r28     
 L  r29     
 L  r30     
 L  r31     
 L  r32     
 L  r33     
 L  r34     
 L  r35     
 L  r36     
 L  r37     
 L  r38     
 L  r39     
 L  r40     
 E  r41     
 L  r42     
 L  r43     
 L  r44     
 L  r45     
 L  r46     
 L  r47     
 L  r48     
 L  r49     
COLUMNS
    MARK0000  'MARKER'                 'INTORG'
    c0        r0        1
    c0        r2        1
    c0        r8        -1
    c0        r29       -1
    c0        r45       -90
    c1        r0        1
    c1        r2        2
    c1        r8        -2
    c1        r30       -1
    c1        r45       -45
    c2        r0        1
    c2        r3        1
    c2        r9        -1
    c2        r31       -1
    c2        r45       -90
    c3        r0        1
    c3        r3        2
    c3        r9        -2
    c3        r32       -1
    c3        r45       -45
    c4        r0        1
    c4        r4        1
    c4        r10       -1
    c4        r33       -1
    c4        r45       -90
    c5        r0        1
    c5        r4        2
    c5        r10       -2
    c5        r34       -1
    c5        r45       -45
    c6        r0        1
    c6        r42       -1
    c6        r45       -3600
    c6        r48       3609.85010041154
    c7        Obj       0.00404170098783371
    c7        r1        1
    c7        r2        1
    c7        r8        -1
    c7        r35       -1
    c7        r46       -30
    c8        Obj       0.00114913108467247
    c8        r1        1
    c8        r2        2
    c8        r8        -2
    c8        r36       -1
    c8        r46       -24.2148601936775
    c9        Obj       0.00404170098783371
    c9        r1        1
    c9        r3        1
    c9        r9        -1
    c9        r37       -1
    c9        r46       -30
    c10       Obj       0.00114913108467247
    c10       r1        1
    c10       r3        2
    c10       r9        -2
    c10       r38       -1
    c10       r46       -24.2148601936775
    c11       Obj       0.00404170098783371
    c11       r1        1
    c11       r4        1
    c11       r10       -1
    c11       r39       -1
    c11       r46       -30
    c12       Obj       0.00114913108467247
    c12       r1        1
    c12       r4        2
    c12       r10       -2
    c12       r40       -1
    c12       r46       -24.2148601936775
    c13       r1        1
    c13       r43       -1
    c13       r46       -3600
    c13       r49       3602.29826216934
    c14       r5        1
    c15       r5        1
    c15       r8        1
    c15       r11       -3600
    c15       r23       3600
    c16       r5        1
    c16       r8        2
    c16       r12       -3600
    c16       r24       3600
    c17       r6        1
    c18       r6        1
    c18       r9        1
    c18       r13       -3600
    c18       r25       3600
    c19       r6        1
    c19       r9        2
    c19       r14       -3600
    c19       r26       3600
    c20       r7        1
    c21       r7        1
    c21       r10       1
    c21       r15       -3600
    c21       r27       3600
    c22       r7        1
    c22       r10       2
    c22       r16       -3600
    c22       r28       3600
    MARK0001  'MARKER'                 'INTEND'
    c23       Obj       2.54177777777778e-05
    c23       r11       1
    c23       r17       1
    c23       r23       -1
    c24       Obj       4.13038888888889e-05
    c24       r12       1
    c24       r18       1
    c24       r24       -1
    c25       Obj       2.54177777777778e-05
    c25       r13       1
    c25       r19       1
    c25       r25       -1
    c26       Obj       4.13038888888889e-05
    c26       r14       1
    c26       r20       1
    c26       r26       -1
    c27       Obj       2.8595e-05
    c27       r15       1
    c27       r21       1
    c27       r27       -1
    c28       Obj       4.44811111111111e-05
    c28       r16       1
    c28       r22       1
    c28       r28       -1
    c29       r17       -1
    c29       r18       -1
    c29       r19       -1
    c29       r20       -1
    c29       r21       -1
    c29       r22       -1
    c29       r23       1
    c29       r24       1
    c29       r25       1
    c29       r26       1
    c29       r27       1
    c29       r28       1
    c29       r44       -1
    c29       r45       1
    c29       r46       1
    c29       r47       1
    c29       r48       1
    c29       r49       1
    MARK0002  'MARKER'                 'INTORG'
    c30       r29       1
    c30       r41       1
    c30       r44       90
    c31       r30       1
    c31       r41       1
    c31       r44       45
    c32       r31       1
    c32       r41       1
    c32       r44       90
    c33       r32       1
    c33       r41       1
    c33       r44       45
    c34       r33       1
    c34       r41       1
    c34       r44       90
    c35       r34       1
    c35       r41       1
    c35       r44       45
    c36       r35       1
    c36       r41       1
    c36       r44       30
    c37       r36       1
    c37       r41       1
    c37       r44       24.2148601936775
    c38       r37       1
    c38       r41       1
    c38       r44       30
    c39       r38       1
    c39       r41       1
    c39       r44       24.2148601936775
    c40       r39       1
    c40       r41       1
    c40       r44       30
    c41       r40       1
    c41       r41       1
    c41       r44       24.2148601936775
    c42       r41       1
    c42       r42       1
    c42       r43       1
    c42       r44       3600
    c42       r47       3600
    MARK0003  'MARKER'                 'INTEND'
    c43       r48       -1
    c44       Obj       0.0005
    c44       r49       -1
RHS
    RHS_V     r0        1
    RHS_V     r1        1
    RHS_V     r2        2
    RHS_V     r3        2
    RHS_V     r4        2
    RHS_V     r5        1
    RHS_V     r6        1
    RHS_V     r7        1
    RHS_V     r23       3600
    RHS_V     r24       3600
    RHS_V     r25       3600
    RHS_V     r26       3600
    RHS_V     r27       3600
    RHS_V     r28       3600
    RHS_V     r41       1
    RHS_V     r47       7200
    RHS_V     r48       3600
    RHS_V     r49       3600
BOUNDS
 BV BOUND     c0      
 BV BOUND     c1      
 BV BOUND     c2      
 BV BOUND     c3      
 BV BOUND     c4      
 BV BOUND     c5      
 BV BOUND     c6      
 BV BOUND     c7      
 BV BOUND     c8      
 BV BOUND     c9      
 BV BOUND     c10     
 BV BOUND     c11     
 BV BOUND     c12     
 BV BOUND     c13     
 BV BOUND     c14     
 BV BOUND     c15     
 BV BOUND     c16     
 BV BOUND     c17     
 BV BOUND     c18     
 BV BOUND     c19     
 BV BOUND     c20     
 BV BOUND     c21     
 BV BOUND     c22     
 UP BOUND     c23       3600
 UP BOUND     c24       3600
 UP BOUND     c25       3600
 UP BOUND     c26       3600
 UP BOUND     c27       3600
 UP BOUND     c28       3600
 UP BOUND     c29       3600
 BV BOUND     c30     
 BV BOUND     c31     
 BV BOUND     c32     
 BV BOUND     c33     
 BV BOUND     c34     
 BV BOUND     c35     
 BV BOUND     c36     
 BV BOUND     c37     
 BV BOUND     c38     
 BV BOUND     c39     
 BV BOUND     c40     
 BV BOUND     c41     
 BV BOUND     c42     
 UP BOUND     c43       3609.85010041154
 UP BOUND     c44       3602.29826216934
ENDATA
