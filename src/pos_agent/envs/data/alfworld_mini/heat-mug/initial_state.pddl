;; alfworld-mini: heat-mug (kitchen)
;; The paper's Figure 1 case: find a mug, heat it in the microwave, put it in a cabinet.
;; Display names: Cabinet_bar_4 = cabinet 1, Cabinet_bar_3 = cabinet 2, Cabinet_bar_2 = cabinet 3, Cabinet_bar_1 = cabinet 4, CoffeeMachine_bar_1 = coffeemachine 1, CounterTop_bar_2 = countertop 1, CounterTop_bar_1 = countertop 2, Drawer_bar_2 = drawer 1, Drawer_bar_1 = drawer 2, Fridge_bar_1 = fridge 1, GarbageCan_bar_1 = garbagecan 1, Microwave_bar_1 = microwave 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, StoveBurner_bar_2 = stoveburner 1, StoveBurner_bar_1 = stoveburner 2, Toaster_bar_1 = toaster 1
;;                Mug_bar_1 = mug 1, Cup_bar_1 = cup 1, Bread_bar_1 = bread 1, Apple_bar_1 = apple 1, Egg_bar_1 = egg 1, Plate_bar_1 = plate 1, Knife_bar_1 = knife 1, Spatula_bar_1 = spatula 1, SaltShaker_bar_1 = saltshaker 1, Pan_bar_1 = pan 1
(define (problem heat_mug)
    (:domain alfred)
    (:objects
        agent1 - agent
        AppleType - otype
        BreadType - otype
        ButterKnifeType - otype
        CupType - otype
        EggType - otype
        KnifeType - otype
        MugType - otype
        PanType - otype
        PlateType - otype
        SaltShakerType - otype
        SpatulaType - otype
        CabinetType - rtype
        CoffeeMachineType - rtype
        CounterTopType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        StoveBurnerType - rtype
        ToasterType - rtype
        Mug_bar_1 - object
        Cup_bar_1 - object
        Bread_bar_1 - object
        Apple_bar_1 - object
        Egg_bar_1 - object
        Plate_bar_1 - object
        Knife_bar_1 - object
        Spatula_bar_1 - object
        SaltShaker_bar_1 - object
        Pan_bar_1 - object
        Cabinet_bar_4 - receptacle
        Cabinet_bar_3 - receptacle
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CoffeeMachine_bar_1 - receptacle
        CounterTop_bar_2 - receptacle
        CounterTop_bar_1 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Fridge_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Microwave_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        StoveBurner_bar_2 - receptacle
        StoveBurner_bar_1 - receptacle
        Toaster_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
        loc_bar_14 - location
        loc_bar_15 - location
        loc_bar_16 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Cabinet_bar_4 CabinetType)
        (receptacleAtLocation Cabinet_bar_4 loc_bar_1)
        (openable Cabinet_bar_4)
        (receptacleType Cabinet_bar_3 CabinetType)
        (receptacleAtLocation Cabinet_bar_3 loc_bar_2)
        (openable Cabinet_bar_3)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_3)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_4)
        (openable Cabinet_bar_1)
        (receptacleType CoffeeMachine_bar_1 CoffeeMachineType)
        (receptacleAtLocation CoffeeMachine_bar_1 loc_bar_5)
        (receptacleType CounterTop_bar_2 CounterTopType)
        (receptacleAtLocation CounterTop_bar_2 loc_bar_6)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_7)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_8)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_9)
        (openable Drawer_bar_1)
        (receptacleType Fridge_bar_1 FridgeType)
        (receptacleAtLocation Fridge_bar_1 loc_bar_10)
        (openable Fridge_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_11)
        (receptacleType Microwave_bar_1 MicrowaveType)
        (receptacleAtLocation Microwave_bar_1 loc_bar_12)
        (openable Microwave_bar_1)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_13)
        (receptacleType StoveBurner_bar_2 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_2 loc_bar_14)
        (receptacleType StoveBurner_bar_1 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_1 loc_bar_15)
        (receptacleType Toaster_bar_1 ToasterType)
        (receptacleAtLocation Toaster_bar_1 loc_bar_16)
        (objectType Mug_bar_1 MugType)
        (inReceptacle Mug_bar_1 CounterTop_bar_1)
        (objectAtLocation Mug_bar_1 loc_bar_7)
        (pickupable Mug_bar_1)
        (heatable Mug_bar_1)
        (coolable Mug_bar_1)
        (cleanable Mug_bar_1)
        (isReceptacleObject Mug_bar_1)
        (objectType Cup_bar_1 CupType)
        (inReceptacle Cup_bar_1 CounterTop_bar_2)
        (objectAtLocation Cup_bar_1 loc_bar_6)
        (pickupable Cup_bar_1)
        (heatable Cup_bar_1)
        (coolable Cup_bar_1)
        (cleanable Cup_bar_1)
        (isReceptacleObject Cup_bar_1)
        (objectType Bread_bar_1 BreadType)
        (inReceptacle Bread_bar_1 CounterTop_bar_1)
        (objectAtLocation Bread_bar_1 loc_bar_7)
        (pickupable Bread_bar_1)
        (heatable Bread_bar_1)
        (coolable Bread_bar_1)
        (objectType Apple_bar_1 AppleType)
        (inReceptacle Apple_bar_1 Fridge_bar_1)
        (objectAtLocation Apple_bar_1 loc_bar_10)
        (pickupable Apple_bar_1)
        (heatable Apple_bar_1)
        (coolable Apple_bar_1)
        (cleanable Apple_bar_1)
        (objectType Egg_bar_1 EggType)
        (inReceptacle Egg_bar_1 Fridge_bar_1)
        (objectAtLocation Egg_bar_1 loc_bar_10)
        (pickupable Egg_bar_1)
        (heatable Egg_bar_1)
        (coolable Egg_bar_1)
        (cleanable Egg_bar_1)
        (objectType Plate_bar_1 PlateType)
        (inReceptacle Plate_bar_1 Cabinet_bar_3)
        (objectAtLocation Plate_bar_1 loc_bar_2)
        (pickupable Plate_bar_1)
        (heatable Plate_bar_1)
        (coolable Plate_bar_1)
        (cleanable Plate_bar_1)
        (isReceptacleObject Plate_bar_1)
        (objectType Knife_bar_1 KnifeType)
        (inReceptacle Knife_bar_1 Drawer_bar_2)
        (objectAtLocation Knife_bar_1 loc_bar_8)
        (pickupable Knife_bar_1)
        (cleanable Knife_bar_1)
        (objectType Spatula_bar_1 SpatulaType)
        (inReceptacle Spatula_bar_1 Drawer_bar_1)
        (objectAtLocation Spatula_bar_1 loc_bar_9)
        (pickupable Spatula_bar_1)
        (cleanable Spatula_bar_1)
        (objectType SaltShaker_bar_1 SaltShakerType)
        (inReceptacle SaltShaker_bar_1 Cabinet_bar_2)
        (objectAtLocation SaltShaker_bar_1 loc_bar_3)
        (pickupable SaltShaker_bar_1)
        (objectType Pan_bar_1 PanType)
        (inReceptacle Pan_bar_1 StoveBurner_bar_2)
        (objectAtLocation Pan_bar_1 loc_bar_14)
        (pickupable Pan_bar_1)
        (coolable Pan_bar_1)
        (cleanable Pan_bar_1)
        (isReceptacleObject Pan_bar_1)
        (canContain CabinetType CupType)
        (canContain CabinetType MugType)
        (canContain CabinetType PanType)
        (canContain CabinetType PlateType)
        (canContain CabinetType SaltShakerType)
        (canContain CoffeeMachineType MugType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType BreadType)
        (canContain CounterTopType CupType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType KnifeType)
        (canContain CounterTopType MugType)
        (canContain CounterTopType PanType)
        (canContain CounterTopType PlateType)
        (canContain CounterTopType SaltShakerType)
        (canContain CounterTopType SpatulaType)
        (canContain DrawerType KnifeType)
        (canContain DrawerType SaltShakerType)
        (canContain DrawerType SpatulaType)
        (canContain FridgeType AppleType)
        (canContain FridgeType BreadType)
        (canContain FridgeType CupType)
        (canContain FridgeType EggType)
        (canContain FridgeType MugType)
        (canContain FridgeType PanType)
        (canContain FridgeType PlateType)
        (canContain GarbageCanType AppleType)
        (canContain GarbageCanType BreadType)
        (canContain GarbageCanType EggType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType BreadType)
        (canContain MicrowaveType CupType)
        (canContain MicrowaveType EggType)
        (canContain MicrowaveType MugType)
        (canContain MicrowaveType PlateType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType CupType)
        (canContain SinkBasinType EggType)
        (canContain SinkBasinType KnifeType)
        (canContain SinkBasinType MugType)
        (canContain SinkBasinType PanType)
        (canContain SinkBasinType PlateType)
        (canContain SinkBasinType SpatulaType)
        (canContain StoveBurnerType PanType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (heatable ?o)
                    (objectType ?o MugType)
                    (receptacleType ?r CabinetType)
                    (isHot ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
