"""erf and erfinv on backend arrays: a float64-accurate NumPy erf (fdlibm's, the CPU's; CUDA has CuPy's own),
and erfinv for any backend.

NumPy has no erf and agnostic depends on NumPy alone, so this ports fdlibm's ``s_erf.c`` (Sun Microsystems, the
algorithm behind glibc's and Go's erf; error below 1 ulp) to vectorized NumPy. Lower precisions compute in float64
and round once, so float32 results are correctly rounded or off by one ulp at most.
"""

import numpy

_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01
# |x| < 0.84375: erf(x) = x + x * P(x^2) / Q(x^2)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# 0.84375 <= |x| < 1.25: erf(x) = erx + P(|x| - 1) / Q(|x| - 1)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# 1.25 <= |x| < 1/0.35: erfc(x) = exp(-x^2 - 0.5625 + R(1/x^2) / S(1/x^2)) / x
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
# 1/0.35 <= |x| < 6
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _poly(coefficients, z):
    result = numpy.full_like(z, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = result * z + c
    return result


def _erf_float64(x):
    ax = numpy.abs(x)
    result = numpy.empty_like(x)
    small = ax < 0.84375
    if small.any():
        v = x[small]
        z = v * v
        result[small] = v + v * (_poly(_PP, z) / _poly(_QQ, z))
    middle = (ax >= 0.84375) & (ax < 1.25)
    if middle.any():
        s = ax[middle] - 1.0
        result[middle] = numpy.copysign(_ERX + _poly(_PA, s) / _poly(_QA, s), x[middle])
    tail = (ax >= 1.25) & (ax < 6.0)
    if tail.any():
        a = ax[tail]
        s = 1.0 / (a * a)
        near = a < 1 / 0.35
        ratio = numpy.where(near, _poly(_RA, s) / _poly(_SA, s), _poly(_RB, s) / _poly(_SB, s))
        # z: a with its low 32 bits cleared, so z*z is exact and exp's argument keeps full precision.
        z = (a.view(numpy.uint64) & numpy.uint64(0xFFFFFFFF00000000)).view(numpy.float64)
        r = numpy.exp(-z * z - 0.5625) * numpy.exp((z - a) * (z + a) + ratio)
        result[tail] = numpy.copysign(1.0 - r / a, x[tail])
    large = ax >= 6.0
    result[large] = numpy.copysign(1.0, x[large])
    nan = numpy.isnan(x)
    result[nan] = x[nan]
    return result


def erf_numpy(array):
    """erf of a floating NumPy array, in its dtype (computed in float64)."""
    values = numpy.asarray(array, dtype=numpy.float64)
    with numpy.errstate(all="ignore"):
        return _erf_float64(values.reshape(-1)).reshape(values.shape).astype(array.dtype, copy=False)




# Giles' single-precision erfinv ("Approximating the erfinv function", 2010), refined by Newton steps below.
_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
            -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844, 0.00134934322,
         0.000100950558, -0.000200214257)


def erfinv(backend, array):
    """Inverse of erf on (-1, 1) (±inf at ±1, NaN outside), in float64 precision, on ``backend``'s array."""
    xp = backend.xp
    y = array.astype(numpy.float64)
    with numpy.errstate(all="ignore"):
        w = -xp.log((1.0 - y) * (1.0 + y))
        central, tail = w - 2.5, xp.sqrt(w) - 3.0
        p_central = xp.full_like(y, _CENTRAL[-1])
        p_tail = xp.full_like(y, _TAIL[-1])
        for c, t in zip(reversed(_CENTRAL[:-1]), reversed(_TAIL[:-1])):
            p_central = p_central * central + c
            p_tail = p_tail * tail + t
        x = xp.where(w < 5.0, p_central, p_tail) * y
        for _ in range(2):
            step = (backend.ops.erf(x) - y) / (1.1283791670955126 * xp.exp(-x * x))
            x = xp.where(xp.isfinite(step), x - step, x)
        x = xp.where(xp.abs(y) == 1.0, xp.copysign(xp.inf, y), x)
        x = xp.where(xp.abs(y) > 1.0, xp.nan, x)
    return x.astype(array.dtype, copy=False)


def library_function(load_library, load_xp, name, adjust=None):
    """``f(*arguments)``: ``<library>.<name>`` (``load_library()`` gives ``scipy.special`` or
    ``cupyx.scipy.special``, imported on the first call, never at ``import agnostic``) of backend arrays and numbers,
    its result in the dtype of the first array argument. float16 and bfloat16 arrays are computed in float32 (the
    libraries have no half-precision loops); ``adjust(xp, result, *arguments)`` then gives PyTorch's values where
    the library's differ (``lgamma(-inf)``)."""
    loaded = []

    def compute(*arguments):
        if not loaded:
            loaded.extend((getattr(_imported(load_library, name), name), load_xp()))
        function, xp = loaded
        dtype = next(argument.dtype for argument in arguments if hasattr(argument, "ndim"))
        wide = [argument.astype(numpy.float32) if _is_half(argument) else argument for argument in arguments]
        with numpy.errstate(all="ignore"):
            result = xp.asarray(function(*wide))
            if adjust is not None:
                result = adjust(xp, result, *wide)
        return result.astype(dtype, copy=False)
    compute.__name__ = name
    return compute


def _imported(load_library, name):
    try:
        return load_library()
    except ImportError as error:
        package = (error.name or "scipy").split(".")[0]
        hint = "pip install 'agnostic-tensor[cuda12]' (or cuda13)" if package.startswith("cupy") else \
            f"pip install {package} (one of agnostic's dependencies; reinstalling agnostic installs it)"
        raise ModuleNotFoundError(f"{name} needs {package}, which could not be imported ({error}): {hint}",
                                  name=package) from None


def _is_half(argument):
    dtype = getattr(argument, "dtype", None)
    return dtype is not None and dtype.itemsize == 2 and dtype.kind in "fV"


# ----- torch.special's Bessel and Airy functions --------------------------------------------------------------------
# PyTorch's formulas (ATen/native/Math.h, after Cephes), on any backend's arrays, in the array's own precision as
# PyTorch computes them, so that CPU and CUDA give the same values. Each branch is computed for every element and the
# one that applies is selected. The coefficient tables are Cephes', highest power first.
_AIRY_AI_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
    1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
    1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AIRY_AI_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
    1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
    1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AIRY_AI_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AIRY_AI_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AIRY_AI_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AIRY_AI_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
    5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
    4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
    4.91834570062930015649e-09)
_BESSEL_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
    5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
    9.99999999999999997821e-01)
_BESSEL_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
    5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
    1.00000000000000000218e+00)
_BESSEL_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
    -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
    -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_BESSEL_J0_QQ = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
    7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
    2.42005740240291393179e+02)
_BESSEL_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
    9.70862251047306323952e+15)
_BESSEL_J0_RQ = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
    1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
    3.18121955943204943306e+16, 1.71086294081043136091e+18)
_BESSEL_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
    5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
    1.00000000000000000254e+00)
_BESSEL_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
    5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
    9.99999999999999997461e-01)
_BESSEL_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
    3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
    2.11688757100572135698e+02, 2.52070205858023719784e+01)
_BESSEL_J1_QQ = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
    9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
    3.36093607810698293419e+02)
_BESSEL_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
    3.68295732863852883286e+15)
_BESSEL_J1_RQ = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
    2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
    8.95222336184627338078e+16, 5.32278620332680085395e+18)
_BESSEL_Y0_YP = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
    -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
    4.42733268572569800351e+16, -1.84950800436986690637e+16)
_BESSEL_Y0_YQ = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
    8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
    2.50596256172653059228e+17)
_BESSEL_Y1_YP = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
    -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_BESSEL_Y1_YQ = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
    1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
    6.87141087355300489866e+16, 3.97270608116560655612e+18)
_MODIFIED_BESSEL_I0_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
    -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07,
    1.11738753912010371815e-06, -4.41673835845875056359e-06, 1.64484480707288970893e-05,
    -5.75419501008210370398e-05, 1.88502885095841655729e-04, -5.76375574538582365885e-04,
    1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
    -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02,
    1.71620901522208775349e-01, -3.04682672343198398683e-01, 6.76795274409476084995e-01)
_MODIFIED_BESSEL_I0_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-09, 2.26666899049817806459e-08, 2.04891858946906374183e-07,
    2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
    8.04490411014108831608e-01)
_MODIFIED_BESSEL_I1_A = (2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
    9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07,
    -8.56872026469545474066e-07, 3.47025130813767847674e-06, -1.32731636560394358279e-05,
    4.78156510755005422638e-05, -1.61760815825896745588e-04, 5.12285956168575772895e-04,
    -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
    2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01,
    -1.76416518357834055153e-01, 2.52587186443633654823e-01)
_MODIFIED_BESSEL_I1_B = (7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
    -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
    7.78576235018280120474e-01)
_MODIFIED_BESSEL_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
    1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
    1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
    -5.35327393233902768720e-01)
_MODIFIED_BESSEL_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
    6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
    1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
    2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
    2.44030308206595545468e+00)
_MODIFIED_BESSEL_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, 1.52530022733894777053e+00)
_MODIFIED_BESSEL_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
    1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
    3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
    2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
    1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00)

_TWO_OVER_PI = 0.636619772367581343075535053490057448
_SQRT_TWO_OVER_PI = 0.797884560802865355879892119868763737
_QUARTER_PI = 0.785398163397448309615660845819875721
_THREE_QUARTERS_PI = 2.356194490192344928846982537459627163
_ONE_OVER_SQRT_PI = 5.64189583547756286948e-01


def _horner(xp, coefficients, z):
    result = xp.full_like(z, coefficients[0])
    for c in coefficients[1:]:
        result = result * z + c
    return result


def _chebyshev_series(xp, coefficients, y):
    """Cephes' ``chbevl``: the Chebyshev series of ``coefficients`` at ``y`` (half its usual argument doubled)."""
    previous, current = xp.zeros_like(y), xp.zeros_like(y)
    value = xp.full_like(y, coefficients[0])
    for c in coefficients[1:]:
        previous, current = current, value
        value = y * current - previous + c
    return 0.5 * (value - previous)


def _hankel_asymptotic(xp, x, phase, sine_first):
    """The large-argument form of J0/J1 (``sine_first`` False) and Y0/Y1 (True), ``x`` > 5."""
    tables = (_BESSEL_J0_PP, _BESSEL_J0_PQ, _BESSEL_J0_QP, _BESSEL_J0_QQ) if phase == _QUARTER_PI else \
        (_BESSEL_J1_PP, _BESSEL_J1_PQ, _BESSEL_J1_QP, _BESSEL_J1_QQ)
    z = 25.0 / (x * x) if phase == _QUARTER_PI else 5.0 / x * (5.0 / x)
    pp, pq, qp, qq = (_horner(xp, table, z) for table in tables)
    p, q = pp / pq, 5.0 / x * (qp / qq)
    angle = x - phase
    if sine_first:
        return (p * xp.sin(angle) + q * xp.cos(angle)) * _SQRT_TWO_OVER_PI / xp.sqrt(x)
    return (p * xp.cos(angle) - q * xp.sin(angle)) * _SQRT_TWO_OVER_PI / xp.sqrt(x)


def bessel_j0(xp, x):
    """The Bessel function of the first kind of order 0."""
    x = xp.abs(x)
    z = x * x
    near = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * _horner(xp, _BESSEL_J0_RP, z) \
        / _horner(xp, _BESSEL_J0_RQ, z)
    near = xp.where(x < 0.00001, 1.0 - z / 4.0, near)
    return xp.where(x <= 5.0, near, _hankel_asymptotic(xp, x, _QUARTER_PI, False))


def bessel_j1(xp, x):
    """The Bessel function of the first kind of order 1 (odd)."""
    sign, x = xp.where(x < 0, -1.0, 1.0).astype(x.dtype), xp.abs(x)
    z = x * x
    near = _horner(xp, _BESSEL_J1_RP, z) / _horner(xp, _BESSEL_J1_RQ, z) * x \
        * (z - 1.46819706421238932572e+01) * (z - 4.92184563216946036703e+01)
    return sign * xp.where(x <= 5.0, near, _hankel_asymptotic(xp, x, _THREE_QUARTERS_PI, False))


def bessel_y0(xp, x):
    """The Bessel function of the second kind of order 0: -inf at 0, NaN for negative ``x``."""
    z = x * x
    near = _horner(xp, _BESSEL_Y0_YP, z) / _horner(xp, _BESSEL_Y0_YQ, z) \
        + _TWO_OVER_PI * xp.log(x) * bessel_j0(xp, x)
    result = xp.where(x <= 5.0, near, _hankel_asymptotic(xp, x, _QUARTER_PI, True))
    return xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, result))


def bessel_y1(xp, x):
    """The Bessel function of the second kind of order 1: -inf at 0, NaN for negative ``x``."""
    z = x * x
    near = x * (_horner(xp, _BESSEL_Y1_YP, z) / _horner(xp, _BESSEL_Y1_YQ, z)) \
        + _TWO_OVER_PI * (bessel_j1(xp, x) * xp.log(x) - 1.0 / x)
    result = xp.where(x <= 5.0, near, _hankel_asymptotic(xp, x, _THREE_QUARTERS_PI, True))
    return xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, result))


def modified_bessel_i0(xp, x):
    """The modified Bessel function of the first kind of order 0."""
    a = xp.abs(x)
    near = _chebyshev_series(xp, _MODIFIED_BESSEL_I0_A, a / 2.0 - 2.0)
    far = _chebyshev_series(xp, _MODIFIED_BESSEL_I0_B, 32.0 / a - 2.0) / xp.sqrt(a)
    return xp.exp(a) * xp.where(a <= 8.0, near, far)


def modified_bessel_i1(xp, x):
    """The modified Bessel function of the first kind of order 1 (odd)."""
    a = xp.abs(x)
    near = _chebyshev_series(xp, _MODIFIED_BESSEL_I1_A, a / 2.0 - 2.0) * a * xp.exp(a)
    far = xp.exp(a) * _chebyshev_series(xp, _MODIFIED_BESSEL_I1_B, 32.0 / a - 2.0) / xp.sqrt(a)
    result = xp.where(a <= 8.0, near, far)
    return xp.where(x < 0, -result, result)


def _modified_bessel_k(xp, x, order, scaled):
    """K0 or K1 (``order``), times ``exp(x)`` where ``scaled``: inf at 0, NaN for negative ``x``."""
    if order == 0:
        near = _chebyshev_series(xp, _MODIFIED_BESSEL_K0_A, x * x - 2.0) - xp.log(0.5 * x) * modified_bessel_i0(xp, x)
        series = _chebyshev_series(xp, _MODIFIED_BESSEL_K0_B, 8.0 / x - 2.0)
    else:
        near = xp.log(0.5 * x) * modified_bessel_i1(xp, x) + _chebyshev_series(xp, _MODIFIED_BESSEL_K1_A,
                                                                                 x * x - 2.0) / x
        series = _chebyshev_series(xp, _MODIFIED_BESSEL_K1_B, 8.0 / x - 2.0)
    if scaled:
        result = xp.where(x <= 2.0, near * xp.exp(x), series / xp.sqrt(x))
    else:
        result = xp.where(x <= 2.0, near, xp.exp(-x) * series / xp.sqrt(x))
    return xp.where(x == 0, xp.inf, xp.where(x < 0, xp.nan, result))


def modified_bessel_k0(xp, x):
    """The modified Bessel function of the second kind of order 0."""
    return _modified_bessel_k(xp, x, 0, scaled=False)


def modified_bessel_k1(xp, x):
    """The modified Bessel function of the second kind of order 1."""
    return _modified_bessel_k(xp, x, 1, scaled=False)


def scaled_modified_bessel_k0(xp, x):
    """``exp(x) * K0(x)``."""
    return _modified_bessel_k(xp, x, 0, scaled=True)


def scaled_modified_bessel_k1(xp, x):
    """``exp(x) * K1(x)``."""
    return _modified_bessel_k(xp, x, 1, scaled=True)


def spherical_bessel_j0(xp, x):
    """``sin(x) / x``, by its Taylor series near 0; 0 at +-inf."""
    z = x * x
    series = 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (
        1.0 / 362880.0 + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))))
    result = xp.where(xp.abs(x) < 0.5, series, xp.sin(x) / x)
    return xp.where(xp.isinf(x), 0.0, result).astype(x.dtype, copy=False)


_AIRY_SERIES_TERMS = 40  # the power series converges within about 12 terms on |x| < 2.09, where it is used


def airy_ai(xp, x):
    """The Airy function Ai: asymptotic forms for ``x`` < -2.09 and ``x`` >= 2.09, its power series between;
    NaN at +-inf, 0 beyond 103.892."""
    eps = numpy.finfo(x.dtype).eps
    # x < -2.09: oscillating
    negative = xp.minimum(x, -2.09)
    root = xp.sqrt(-negative)
    zeta_negative = -2.0 * negative * root / 3.0
    z = 1.0 / zeta_negative
    zz = z * z
    afn, afd = _horner(xp, _AIRY_AI_AFN, zz), _horner(xp, _AIRY_AI_AFD, zz)
    agn, agd = _horner(xp, _AIRY_AI_AGN, zz), _horner(xp, _AIRY_AI_AGD, zz)
    t = zeta_negative + 0.25 * numpy.pi
    oscillating = _ONE_OVER_SQRT_PI / xp.sqrt(root) * (xp.sin(t) * (1.0 + zz * afn / afd) - xp.cos(t) * (z * agn / agd))
    # x >= 2.09: decaying
    positive = xp.maximum(x, 2.09)
    zeta = 2.0 * positive * xp.sqrt(positive) / 3.0
    decaying = _ONE_OVER_SQRT_PI * (_horner(xp, _AIRY_AI_AN, 1.0 / zeta) / _horner(xp, _AIRY_AI_AD, 1.0 / zeta)) \
        / (2.0 * xp.sqrt(xp.sqrt(positive)) * xp.exp(zeta))
    # between: Ai = c1 f - c2 g, their power series summed until a term is below epsilon (relative)
    middle = xp.clip(x, -2.09, 2.09)
    f, g, k, m, n = xp.ones_like(middle), middle.copy(), xp.ones_like(middle), xp.ones_like(middle), middle.copy()
    cube = middle * middle * middle
    summing = xp.ones(middle.shape, bool)
    for _ in range(_AIRY_SERIES_TERMS):
        m_next = m * cube / (k + 1.0) / (k + 2.0)
        n_next = n * cube / (k + 2.0) / (k + 3.0)
        f = xp.where(summing, f + m_next, f)
        g = xp.where(summing, g + n_next, g)
        m, n, k = xp.where(summing, m_next, m), xp.where(summing, n_next, n), xp.where(summing, k + 3.0, k)
        summing = summing & (xp.abs(m / f) > eps)
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    result = xp.where(x < -2.09, oscillating, xp.where(x >= 2.09, decaying, series))
    result = xp.where(x > 103.892, 0.0, result)
    result = xp.where(xp.isnan(x), x, result)
    return xp.where(xp.isinf(x), xp.nan, result).astype(x.dtype, copy=False)


# ----- torch.special's orthogonal polynomials -----------------------------------------------------------------------
# P_n(x) for x and n arrays of one float dtype, n truncated to an integer (non-finite n counts as negative: 0), by
# PyTorch's three-term recurrences and its special cases (|x| = 1, n < 0, and closed forms for large n on |x| < 1).
_CHECK_EVERY = 32  # recurrence steps between checks for elements still moving (each check syncs a GPU)


def degrees(xp, n):
    """``n`` truncated to int64, as PyTorch's ``static_cast<int64_t>``; -1 where it is not finite or out of
    range."""
    valid = xp.isfinite(n) & (xp.abs(n) < 2.0 ** 62)
    return xp.where(valid, xp.trunc(xp.where(valid, n, 0)), -1).astype(numpy.int64)


def recurrence(xp, x, degree, first, step):
    """``q_n`` of the recurrence ``q_0 = 1``, ``q_1 = first``, ``q_{j+1} = step(j, p=q_{j-1}, q=q_j)`` at each
    element's ``degree`` (the value for degrees below 2 is ``first``); elements stop once they are NaN, as in
    PyTorch, and only those still moving are computed."""
    result = first.copy()
    steps = degree - 1
    moving = xp.flatnonzero((steps >= 1) & ~xp.isnan(first))
    if moving.size == 0:
        return result
    x_moving, remaining = x.reshape(-1)[moving], steps.reshape(-1)[moving]
    p, q = xp.ones_like(x_moving), first.reshape(-1)[moving]
    flat = result.reshape(-1)
    j = 1
    while moving.size:
        for _ in range(_CHECK_EVERY):
            r = step(j, x_moving, p, q)
            going = remaining >= j
            p, q = xp.where(going, q, p), xp.where(going, r, q)
            j += 1
        done = (remaining < j) | xp.isnan(q)
        flat[moving[done]] = q[done]
        keep = ~done
        moving, x_moving, remaining, p, q = moving[keep], x_moving[keep], remaining[keep], p[keep], q[keep]
    return flat.reshape(result.shape)


def _chebyshev_family(xp, x, n, first, at_one, at_minus_one, closed_form, threshold, shifted=False):
    """Chebyshev polynomials T, U, V, W (and their shifted forms, of ``2x - 1``): ``first`` is P_1, ``at_one`` and
    ``at_minus_one`` the values at the ends of [-1, 1] (of [0, 1] when ``shifted``), ``closed_form(nf, theta)`` the
    trigonometric form used for degrees above ``threshold`` inside the interval."""
    y = (x + x - 1.0) if shifted else x
    degree = degrees(xp, n)
    nf = degree.astype(x.dtype)
    high, low = (x == 1.0, x == 0.0) if shifted else (x == 1.0, x == -1.0)
    inside = (degree > threshold) & (xp.abs(y) < 1.0)
    with numpy.errstate(all="ignore"):
        # only the elements no other case covers go through the recurrence
        evaluated = xp.where(inside | high | low, 1, degree)
        result = recurrence(xp, y, evaluated, first(y), lambda j, y, p, q: (y + y) * q - p)
        theta = xp.arccos(xp.where(inside, y, 0.0))
        result = xp.where(inside, closed_form(nf, theta, y, degree), result)
    result = xp.where(degree == 0, 1.0, result)
    result = xp.where(high, at_one(nf, degree), xp.where(low, at_minus_one(nf, degree), result))
    return xp.where(degree < 0, 0.0, result).astype(x.dtype, copy=False)


def _alternating(xp, value):
    """``value`` for even degrees, ``-value`` for odd ones."""
    return lambda nf, degree: xp.where(degree % 2 == 0, value(nf), -value(nf))


def chebyshev_polynomial_t(xp, x, n, shifted=False):
    """Chebyshev polynomial of the first kind T_n(x)."""
    return _chebyshev_family(
        xp, x, n, lambda y: y, lambda nf, degree: 1.0, _alternating(xp, lambda nf: 1.0),
        lambda nf, theta, y, degree: xp.cos(nf * theta), 6, shifted)


def chebyshev_polynomial_u(xp, x, n, shifted=False):
    """Chebyshev polynomial of the second kind U_n(x)."""
    def closed_form(nf, theta, y, degree):
        sine = xp.sin(theta)
        return xp.where(sine != 0, xp.sin((nf + 1) * theta) / sine, (nf + 1) * xp.cos((nf + 1) * theta) / y)
    return _chebyshev_family(xp, x, n, lambda y: y + y, lambda nf, degree: nf + 1, _alternating(xp, lambda nf: nf + 1),
                             closed_form, 6 if shifted else 8, shifted)


def chebyshev_polynomial_v(xp, x, n, shifted=False):
    """Chebyshev polynomial of the third kind V_n(x)."""
    odd_values = _alternating(xp, lambda nf: nf + nf + 1)

    def closed_form(nf, theta, y, degree):
        return xp.where(xp.sin(theta / 2.0) != 1.0, xp.cos((nf + 0.5) * theta) / xp.cos(theta / 2.0),
                        odd_values(nf, degree))
    return _chebyshev_family(xp, x, n, lambda y: y + y - 1.0, lambda nf, degree: 1.0, odd_values, closed_form,
                             6 if shifted else 8, shifted)


def chebyshev_polynomial_w(xp, x, n, shifted=False):
    """Chebyshev polynomial of the fourth kind W_n(x)."""
    signs = _alternating(xp, lambda nf: 1.0)

    def closed_form(nf, theta, y, degree):
        at_end = xp.where(y > 0, nf + nf + 1, signs(nf, degree)) if not shifted else signs(nf, degree)
        return xp.where(xp.cos(theta / 2.0) != 1.0, xp.sin((nf + 0.5) * theta) / xp.sin(theta / 2.0), at_end)
    return _chebyshev_family(xp, x, n, lambda y: y + y + 1.0, lambda nf, degree: nf + nf + 1, signs, closed_form,
                             4 if shifted else 8, shifted)


def shifted_chebyshev_polynomial_t(xp, x, n):
    """Shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1)."""
    return chebyshev_polynomial_t(xp, x, n, shifted=True)


def shifted_chebyshev_polynomial_u(xp, x, n):
    """Shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1)."""
    return chebyshev_polynomial_u(xp, x, n, shifted=True)


def shifted_chebyshev_polynomial_v(xp, x, n):
    """Shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1)."""
    return chebyshev_polynomial_v(xp, x, n, shifted=True)


def shifted_chebyshev_polynomial_w(xp, x, n):
    """Shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1)."""
    return chebyshev_polynomial_w(xp, x, n, shifted=True)


def _hermite_limit(dtype):
    """The largest degree PyTorch evaluates a Hermite polynomial at (NaN above)."""
    return 128 if dtype == numpy.float32 else 512


def hermite_polynomial_h(xp, x, n):
    """Physicists' Hermite polynomial H_n(x); NaN for degrees above 128 (float32) or 512 (float64)."""
    degree = degrees(xp, n)
    with numpy.errstate(all="ignore"):
        evaluated = xp.where(degree > _hermite_limit(x.dtype), 1, degree)
        result = recurrence(xp, x, evaluated, x + x, lambda j, x, p, q: (x + x) * q - (2 * j) * p)
    result = xp.where(degree > _hermite_limit(x.dtype), xp.nan, result)
    result = xp.where(degree == 0, 1.0, result)
    return xp.where(degree < 0, 0.0, result).astype(x.dtype, copy=False)


def hermite_polynomial_he(xp, x, n):
    """Probabilists' Hermite polynomial He_n(x); NaN for degrees above 128 (float32) or 512 (float64)."""
    degree = degrees(xp, n)
    with numpy.errstate(all="ignore"):
        evaluated = xp.where(degree > _hermite_limit(x.dtype), 1, degree)
        result = recurrence(xp, x, evaluated, x.copy(), lambda j, x, p, q: x * q - j * p)
    result = xp.where(degree > _hermite_limit(x.dtype), xp.nan, result)
    result = xp.where(degree == 0, 1.0, result)
    return xp.where(degree < 0, 0.0, result).astype(x.dtype, copy=False)


def laguerre_polynomial_l(xp, x, n):
    """Laguerre polynomial L_n(x); 1 at x = 0."""
    degree = degrees(xp, n)
    with numpy.errstate(all="ignore"):
        result = recurrence(xp, x, xp.where(x == 0, 1, degree), 1.0 - x,
                            lambda j, x, p, q: (((j + j) + (1.0 - x)) * q - j * p) / (j + 1))
    result = xp.where((degree == 0) | (x == 0), 1.0, result)
    return xp.where(degree < 0, 0.0, result).astype(x.dtype, copy=False)


def legendre_polynomial_p(xp, x, n):
    """Legendre polynomial P_n(x); 1 at x = 1, (-1)^n at x = -1."""
    degree = degrees(xp, n)
    with numpy.errstate(all="ignore"):
        result = recurrence(xp, x, xp.where(xp.abs(x) == 1.0, 1, degree), x.copy(),
                            lambda j, x, p, q: ((j + j + 1) * x * q - j * p) / (j + 1))
    result = xp.where(degree == 0, 1.0, result)
    result = xp.where(xp.abs(x) == 1.0, xp.where((x > 0) | (degree % 2 == 0), 1.0, -1.0), result)
    return xp.where(degree < 0, 0.0, result).astype(x.dtype, copy=False)
